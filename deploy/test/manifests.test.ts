import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { gatewayDuration, renderKustomization, ROOT, type K8sObject } from './support/render';

const SERVICES = ['gateway', 'content-service', 'auth-service', 'session-service'] as const;
/** Services a 64 MiB part passes through: their drain must outlast one part on a slow link. */
const PART_CARRIERS = ['gateway', 'content-service'];
const PART = 64 * 1024 * 1024;
/** The slowest client link the grace period is sized for: 4 Mbit/s. */
const SLOW_LINK_BYTES_PER_SECOND = 500_000;
/** The largest content, which a download without Range streams in one response. */
const CONTENT_LIMIT = 30 * 1024 ** 3;
/** Where Prometheus runs: the only namespace admitted to the metrics port. */
const MONITORING_NAMESPACE = 'monitoring';
/** Who may open connections to whom: the gateway takes traffic from the edge proxies only. */
const CALLERS: Record<string, string[]> = {
  'content-service': ['gateway'],
  // Calls go one way: the session-service reads the registry's database, it never calls the auth-service.
  'auth-service': ['gateway'],
  'session-service': ['gateway', 'auth-service', 'content-service'],
};
const SECRET_LOOKING = /SECRET|PASSWORD|TOKEN|ACCESS_KEY|PRIVATE|^MONGODB_URL$|^REDIS_URL$/;

const overlays = readdirSync(join(ROOT, 'k8s', 'overlays'));

function byKind(objects: K8sObject[], kind: string): K8sObject[] {
  return objects.filter((o) => o.kind === kind);
}

function named(objects: K8sObject[], kind: string, name: string): K8sObject {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  if (!found) throw new Error(`no ${kind} ${name} in the rendered manifests`);
  return found;
}

function selects(
  selector: {
    matchLabels?: Record<string, string>;
    matchExpressions?: { key: string; operator: string; values?: string[] }[];
  },
  labels: Record<string, string>,
): boolean {
  const byLabels = Object.entries(selector.matchLabels ?? {}).every(([k, v]) => labels[k] === v);
  const byExpressions = (selector.matchExpressions ?? []).every(({ key, operator, values = [] }) => {
    if (operator === 'In') return labels[key] !== undefined && values.includes(labels[key]!);
    if (operator === 'NotIn') return labels[key] === undefined || !values.includes(labels[key]!);
    if (operator === 'Exists') return labels[key] !== undefined;
    if (operator === 'DoesNotExist') return labels[key] === undefined;
    throw new Error(`unknown selector operator ${operator}`);
  });
  return byLabels && byExpressions;
}

/** The ConfigMap values a container sees through envFrom, with plain `env` values on top. */
function containerEnv(objects: K8sObject[], container: K8sObject): Record<string, string> {
  const env: Record<string, string> = {};
  for (const source of container.envFrom ?? []) {
    if (source.configMapRef) Object.assign(env, named(objects, 'ConfigMap', source.configMapRef.name).data);
  }
  for (const e of container.env ?? []) if (typeof e.value === 'string') env[e.name] = e.value;
  return env;
}

function preStopDelaySeconds(container: K8sObject): number {
  const command: string[] = container.lifecycle?.preStop?.exec?.command ?? [];
  const timeout = /setTimeout\([^,]+,\s*(\d+)\)/.exec(command.join(' '));
  if (timeout) return Number(timeout[1]) / 1000;
  const sleep = container.lifecycle?.preStop?.sleep?.seconds;
  return typeof sleep === 'number' ? sleep : 0;
}

describe.each(['base', ...overlays.map((o) => `overlays/${o}`)])('k8s/%s', (dir) => {
  const objects = renderKustomization(join('k8s', dir));
  const deployments = byKind(objects, 'Deployment');

  it('commits no Secret (Secrets are created by the operator)', () => {
    expect(byKind(objects, 'Secret').map((s) => s.metadata.name)).toEqual([]);
  });

  it('keeps secret-looking settings out of ConfigMaps and literal env values', () => {
    const leaks: string[] = [];
    for (const cm of byKind(objects, 'ConfigMap'))
      for (const key of Object.keys(cm.data ?? {}))
        if (SECRET_LOOKING.test(key)) leaks.push(`${cm.metadata.name}: ${key}`);
    for (const d of deployments)
      for (const c of d.spec.template.spec.containers)
        for (const e of c.env ?? [])
          if (SECRET_LOOKING.test(e.name) && e.value !== undefined) leaks.push(`${d.metadata.name}: ${e.name}`);
    expect(leaks).toEqual([]);
  });

  it.each(SERVICES)('%s has a Deployment, a Service, an HPA and a PDB that fit together', (name) => {
    const deployment = named(objects, 'Deployment', name);
    const podLabels = deployment.spec.template.metadata.labels;
    expect(selects(deployment.spec.selector, podLabels)).toBe(true);
    const container = deployment.spec.template.spec.containers[0];
    const portNames = container.ports.map((p: K8sObject) => p.name);

    const service = named(objects, 'Service', name);
    expect(selects({ matchLabels: service.spec.selector }, podLabels)).toBe(true);
    for (const port of service.spec.ports) expect(portNames).toContain(port.targetPort);

    const hpa = named(objects, 'HorizontalPodAutoscaler', name);
    expect(hpa.spec.scaleTargetRef).toEqual({ apiVersion: 'apps/v1', kind: 'Deployment', name });
    expect(hpa.spec.minReplicas).toBeGreaterThanOrEqual(1);
    expect(hpa.spec.maxReplicas).toBeGreaterThan(hpa.spec.minReplicas);
    expect(hpa.spec.metrics.length).toBeGreaterThan(0);
    // The autoscaler owns the replica count; a fixed count would fight it on every apply.
    expect(deployment.spec.replicas).toBeUndefined();

    const pdb = named(objects, 'PodDisruptionBudget', name);
    expect(selects(pdb.spec.selector, podLabels)).toBe(true);
    expect(pdb.spec.maxUnavailable ?? pdb.spec.minAvailable).toBeDefined();
    if (pdb.spec.minAvailable !== undefined) expect(pdb.spec.minAvailable).toBeLessThan(hpa.spec.minReplicas);

    for (const source of container.envFrom ?? []) {
      if (source.configMapRef) named(objects, 'ConfigMap', source.configMapRef.name);
    }
    expect(containerEnv(objects, container).PORT).toBe(String(container.ports[0].containerPort));
  });

  it.each(deployments.map((d) => [d.metadata.name, d] as const))(
    'Deployment %s has probes, requests and limits, and runs as non-root',
    (name, deployment) => {
      const pod = deployment.spec.template.spec;
      expect(pod.securityContext?.runAsNonRoot).toBe(true);
      if (pod.securityContext?.runAsUser !== undefined) expect(pod.securityContext.runAsUser).not.toBe(0);
      expect(pod.automountServiceAccountToken).toBe(false);
      for (const c of pod.containers) {
        for (const probe of ['startupProbe', 'livenessProbe', 'readinessProbe'])
          expect({ container: c.name, probe, defined: c[probe] !== undefined }).toEqual({
            container: c.name,
            probe,
            defined: true,
          });
        for (const kind of ['requests', 'limits'])
          for (const r of ['cpu', 'memory']) expect(c.resources?.[kind]?.[r]).toBeDefined();
        expect(c.securityContext?.allowPrivilegeEscalation).toBe(false);
        expect(c.securityContext?.capabilities?.drop).toContain('ALL');
        expect(c.securityContext?.privileged ?? false).toBe(false);
        if (c.securityContext?.runAsUser !== undefined) expect(c.securityContext.runAsUser).not.toBe(0);
      }
      if ((SERVICES as readonly string[]).includes(name)) {
        const c = pod.containers[0];
        expect(c.startupProbe.httpGet.path).toBe('/healthz');
        expect(c.livenessProbe.httpGet.path).toBe('/healthz');
        expect(c.readinessProbe.httpGet.path).toBe('/readyz');
        // Read-only root: the only writable place is an emptyDir on /tmp.
        expect(c.securityContext.readOnlyRootFilesystem).toBe(true);
        const tmp = c.volumeMounts.find((m: K8sObject) => m.mountPath === '/tmp');
        expect(pod.volumes.find((v: K8sObject) => v.name === tmp?.name)?.emptyDir).toBeDefined();
      }
    },
  );

  it.each(PART_CARRIERS)(
    '%s drains for longer than a 64 MiB part takes on a slow link, within terminationGracePeriodSeconds',
    (name) => {
      const deployment = named(objects, 'Deployment', name);
      const pod = deployment.spec.template.spec;
      const container = pod.containers[0];
      const graceMs = Number(containerEnv(objects, container).SHUTDOWN_GRACE_MS);
      expect(graceMs).toBeGreaterThanOrEqual((PART / SLOW_LINK_BYTES_PER_SECOND) * 1000);
      // The kubelet kills at terminationGracePeriodSeconds, counted from before preStop; keep 10 s for closing pools.
      expect(pod.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(
        preStopDelaySeconds(container) + graceMs / 1000 + 10,
      );
    },
  );

  it.each(SERVICES)('%s waits in preStop so endpoints go before the listener closes', (name) => {
    const container = named(objects, 'Deployment', name).spec.template.spec.containers[0];
    expect(preStopDelaySeconds(container)).toBeGreaterThan(0);
  });

  describe('the edge', () => {
    const gatewayService = named(objects, 'Service', 'gateway');
    const servicePort = (service: K8sObject, ref: { number?: number; name?: string }) =>
      service.spec.ports.find((p: K8sObject) => (ref.name !== undefined ? p.name === ref.name : p.port === ref.number));

    it('has one HTTPRoute, to the gateway Service port that targets its API port', () => {
      const routes = byKind(objects, 'HTTPRoute');
      expect(routes.map((r) => r.apiVersion)).toEqual(['gateway.networking.k8s.io/v1']);
      const backends = routes[0]!.spec.rules.flatMap((r: K8sObject) => r.backendRefs);
      expect(backends.length).toBeGreaterThan(0);
      for (const ref of backends) {
        expect({ kind: ref.kind ?? 'Service', name: ref.name }).toEqual({ kind: 'Service', name: 'gateway' });
        expect(servicePort(gatewayService, { number: ref.port })?.targetPort).toBe('http');
      }
      expect(routes[0]!.spec.parentRefs.length).toBeGreaterThan(0);
    });

    it('sets the HTTPRoute timeouts long enough for a 30 GiB download on a slow link', () => {
      const [route] = byKind(objects, 'HTTPRoute');
      for (const rule of route!.spec.rules) {
        // Unset is up to the implementation (Envoy: 15 s); both are set, and "0s" counts as no deadline.
        const { request, backendRequest } = rule.timeouts ?? {};
        expect({ request, backendRequest }).toEqual({
          request: expect.any(String),
          backendRequest: expect.any(String),
        });
        const within = (seconds: number) => seconds === 0 || seconds >= CONTENT_LIMIT / SLOW_LINK_BYTES_PER_SECOND;
        expect([request, within(gatewayDuration(request))]).toEqual([request, true]);
        expect([backendRequest, within(gatewayDuration(backendRequest))]).toEqual([backendRequest, true]);
      }
    });

    it('attaches the HTTPRoute to an HTTPS listener of a Gateway of the overlay that has one', () => {
      const gateways = byKind(objects, 'Gateway');
      const [route] = byKind(objects, 'HTTPRoute');
      for (const parent of route!.spec.parentRefs) {
        const gateway = gateways.find(
          (g) =>
            g.metadata.name === parent.name && (parent.namespace ?? route!.metadata.namespace) === g.metadata.namespace,
        );
        if (!gateway) continue; // the cluster operator's own Gateway (base)
        const listener = gateway.spec.listeners.find((l: K8sObject) => l.name === parent.sectionName);
        expect(listener).toMatchObject({
          protocol: 'HTTPS',
          tls: { mode: 'Terminate', certificateRefs: [{ name: 'content-platform-tls' }] },
        });
        expect(route!.spec.hostnames).toContain(listener.hostname);
      }
    });

    it('keeps an Ingress, if any, to standard fields: a class, TLS, every path to the gateway Service', () => {
      const ingresses = byKind(objects, 'Ingress');
      expect(ingresses.length).toBeLessThanOrEqual(1);
      for (const ingress of ingresses) {
        expect(ingress.spec.ingressClassName).toMatch(/\S/);
        // Controller-specific tuning lives in README "Edge", not in annotations the next controller ignores.
        expect(ingress.metadata.annotations ?? {}).toEqual({});
        const backends = ingress.spec.rules.flatMap((r: K8sObject) =>
          r.http.paths.map((p: K8sObject) => p.backend.service),
        );
        for (const backend of backends) {
          expect(backend.name).toBe('gateway');
          expect(servicePort(gatewayService, backend.port)?.targetPort).toBe('http');
        }
        const hosts = ingress.spec.rules.map((r: K8sObject) => r.host);
        expect(ingress.spec.tls.length).toBeGreaterThan(0);
        for (const tls of ingress.spec.tls) expect(tls.secretName).toMatch(/\S/);
        expect(ingress.spec.tls.flatMap((t: K8sObject) => t.hosts)).toEqual(expect.arrayContaining(hosts));
      }
    });

    it('carries no ingress-nginx annotation on any object', () => {
      const found = objects.flatMap((o) =>
        [...Object.keys(o.metadata.annotations ?? {}), ...Object.keys(o.spec?.template?.metadata?.annotations ?? {})]
          .filter((key) => key.startsWith('nginx.ingress.kubernetes.io/') || key === 'kubernetes.io/ingress.class')
          .map((key) => `${o.kind}/${o.metadata.name}: ${key}`),
      );
      expect(found).toEqual([]);
    });
  });

  describe('metrics', () => {
    const metricsPort = (name: string) =>
      named(objects, 'Deployment', name).spec.template.spec.containers[0].ports.find(
        (p: K8sObject) => p.name === 'metrics',
      ) as K8sObject | undefined;

    it.each(SERVICES)(
      '%s has a container port `metrics` on ADMIN_PORT, with readiness there and liveness on the API port',
      (name) => {
        const container = named(objects, 'Deployment', name).spec.template.spec.containers[0];
        const port = metricsPort(name);
        expect(port).toMatchObject({ containerPort: expect.any(Number), protocol: 'TCP' });
        expect(containerEnv(objects, container).ADMIN_PORT).toBe(String(port!.containerPort));
        expect(port!.containerPort).not.toBe(container.ports.find((p: K8sObject) => p.name === 'http').containerPort);
        expect(container.readinessProbe.httpGet.port).toBe('metrics');
        expect(container.livenessProbe.httpGet.port).toBe('http');
        expect(container.startupProbe.httpGet.port).toBe('http');
      },
    );

    it('exposes no metrics port in any Service, so no route or ingress can reach one', () => {
      const metricsPorts = SERVICES.flatMap((name) => ['metrics', metricsPort(name)?.containerPort]);
      const exposed = byKind(objects, 'Service').flatMap((s) =>
        s.spec.ports
          .filter((p: K8sObject) => metricsPorts.includes(p.targetPort ?? p.port))
          .map((p: K8sObject) => `${s.metadata.name}:${p.port}`),
      );
      expect(exposed).toEqual([]);
    });

    it('relies on no prometheus.io scrape annotations', () => {
      const annotated = byKind(objects, 'Deployment').filter((d) =>
        Object.keys({ ...d.metadata.annotations, ...d.spec.template.metadata.annotations }).some((k) =>
          k.startsWith('prometheus.io/'),
        ),
      );
      expect(annotated.map((d) => d.metadata.name)).toEqual([]);
    });

    const monitors = [...byKind(objects, 'PodMonitor'), ...byKind(objects, 'ServiceMonitor')];
    // A laptop cluster has no Prometheus Operator; every other environment is scraped.
    (dir === 'overlays/local' ? it.skip : it)(
      'has a PodMonitor on the port `metrics` that selects every service',
      () => {
        expect(monitors.map((m) => `${m.apiVersion} ${m.kind}`)).toEqual(['monitoring.coreos.com/v1 PodMonitor']);
        const monitor = monitors[0]!;
        expect(monitor.spec.podMetricsEndpoints).toEqual([
          expect.objectContaining({ port: 'metrics', path: '/metrics' }),
        ]);
        for (const name of SERVICES) {
          const labels = named(objects, 'Deployment', name).spec.template.metadata.labels;
          expect([name, selects(monitor.spec.selector, labels)]).toEqual([name, true]);
        }
      },
    );
  });

  describe('NetworkPolicies', () => {
    const policies = byKind(objects, 'NetworkPolicy');
    const podLabelsOf = (name: string) =>
      named(objects, 'Deployment', name).spec.template.metadata.labels as Record<string, string>;
    const ingressRulesFor = (labels: Record<string, string>) =>
      policies
        .filter((p) => selects(p.spec.podSelector, labels) && (p.spec.policyTypes ?? ['Ingress']).includes('Ingress'))
        .flatMap((p) => p.spec.ingress ?? []);

    it('deny all ingress unless a policy allows it', () => {
      const denyAll = policies.find(
        (p) =>
          Object.keys(p.spec.podSelector).length === 0 &&
          p.spec.policyTypes?.includes('Ingress') &&
          !p.spec.ingress?.length,
      );
      expect(denyAll).toBeDefined();
    });

    const fromOutside = (rule: K8sObject) =>
      !rule.from ||
      rule.from.length === 0 ||
      rule.from.some((peer: K8sObject) => peer.namespaceSelector || peer.ipBlock);
    const fromMonitoring = (rule: K8sObject) =>
      rule.from?.length > 0 &&
      rule.from.every(
        (peer: K8sObject) =>
          !peer.ipBlock &&
          !peer.podSelector &&
          JSON.stringify(peer.namespaceSelector) ===
            JSON.stringify({ matchLabels: { 'kubernetes.io/metadata.name': MONITORING_NAMESPACE } }),
      );
    // A rule without ports admits every port.
    const portsOf = (rule: K8sObject) => (rule.ports ?? [{ port: '(every port)' }]).map((p: K8sObject) => p.port);

    it("let only the gateway's API port take traffic from outside the namespace (Prometheus aside)", () => {
      for (const name of SERVICES) {
        const outside = ingressRulesFor(podLabelsOf(name)).filter(
          (rule: K8sObject) => fromOutside(rule) && !fromMonitoring(rule),
        );
        expect({ name, ports: outside.map(portsOf) }).toEqual({ name, ports: name === 'gateway' ? [['http']] : [] });
      }
    });

    it(`let the namespace ${MONITORING_NAMESPACE} reach every service on the port \`metrics\` only`, () => {
      for (const name of SERVICES) {
        const rules = ingressRulesFor(podLabelsOf(name)).filter(fromMonitoring);
        expect({ name, ports: rules.map(portsOf) }).toEqual({ name, ports: [['metrics']] });
      }
    });

    it.each(Object.entries(CALLERS))('let only its callers reach %s', (name, expected) => {
      const peers = ingressRulesFor(podLabelsOf(name)).flatMap((rule: K8sObject) => rule.from ?? []);
      const callers = SERVICES.filter((caller) =>
        peers.some(
          (peer: K8sObject) =>
            peer.podSelector && !peer.namespaceSelector && selects(peer.podSelector, podLabelsOf(caller)),
        ),
      );
      expect(new Set(callers)).toEqual(new Set(expected));
      // No peer that would also admit some other pod of the namespace.
      for (const peer of peers.filter((p: K8sObject) => !p.namespaceSelector && !p.ipBlock))
        expect(Object.keys(peer.podSelector ?? {}).length).toBeGreaterThan(0);
    });
  });

  if (dir.startsWith('overlays/')) {
    it('puts everything in a namespace that enforces the restricted Pod Security Standard', () => {
      const [namespace] = byKind(objects, 'Namespace');
      expect(namespace?.metadata.labels?.['pod-security.kubernetes.io/enforce']).toBe('restricted');
      for (const o of objects.filter((x) => x.kind !== 'Namespace'))
        expect(`${o.kind}/${o.metadata.name} in ${o.metadata.namespace}`).toBe(
          `${o.kind}/${o.metadata.name} in ${namespace!.metadata.name}`,
        );
    });

    if (dir === 'overlays/production')
      it('gives the content-service ServiceAccount an example IAM role for S3 (IRSA), keeping its API token unmounted', () => {
        const account = named(objects, 'ServiceAccount', 'content-service');
        expect(account.metadata.annotations?.['eks.amazonaws.com/role-arn']).toMatch(/^arn:aws:iam::\d{12}:role\/\S+$/);
        expect(account.automountServiceAccountToken).toBe(false);
        expect(named(objects, 'Deployment', 'content-service').spec.template.spec.serviceAccountName).toBe(
          'content-service',
        );
      });

    it('runs images with an explicit tag', () => {
      for (const d of deployments)
        for (const c of d.spec.template.spec.containers) expect(c.image).toMatch(/:[\w.-]+$/);
      for (const d of deployments)
        for (const c of d.spec.template.spec.containers) expect(c.image).not.toMatch(/:latest$/);
    });
  }
});
