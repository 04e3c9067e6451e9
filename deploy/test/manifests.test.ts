import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { nginxSize, renderKustomization, ROOT, type K8sObject } from './support/render';

const SERVICES = ['gateway', 'content-service', 'auth-service', 'session-service'] as const;
/** Services a 64 MiB part passes through: their drain must outlast one part on a slow link. */
const PART_CARRIERS = ['gateway', 'content-service'];
const PART = 64 * 1024 * 1024;
/** The slowest client link the grace period is sized for: 4 Mbit/s. */
const SLOW_LINK_BYTES_PER_SECOND = 500_000;
/** Who may open connections to whom: the gateway takes traffic from the ingress controller only. */
const CALLERS: Record<string, string[]> = {
  'content-service': ['gateway'],
  'auth-service': ['gateway', 'session-service'],
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
  selector: { matchLabels?: Record<string, string>; matchExpressions?: { key: string; operator: string; values?: string[] }[] },
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
      for (const key of Object.keys(cm.data ?? {})) if (SECRET_LOOKING.test(key)) leaks.push(`${cm.metadata.name}: ${key}`);
    for (const d of deployments)
      for (const c of d.spec.template.spec.containers)
        for (const e of c.env ?? []) if (SECRET_LOOKING.test(e.name) && e.value !== undefined) leaks.push(`${d.metadata.name}: ${e.name}`);
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

  it.each(deployments.map((d) => [d.metadata.name, d] as const))('Deployment %s has probes, requests and limits, and runs as non-root', (name, deployment) => {
    const pod = deployment.spec.template.spec;
    expect(pod.securityContext?.runAsNonRoot).toBe(true);
    if (pod.securityContext?.runAsUser !== undefined) expect(pod.securityContext.runAsUser).not.toBe(0);
    expect(pod.automountServiceAccountToken).toBe(false);
    for (const c of pod.containers) {
      for (const probe of ['startupProbe', 'livenessProbe', 'readinessProbe'])
        expect({ container: c.name, probe, defined: c[probe] !== undefined }).toEqual({ container: c.name, probe, defined: true });
      for (const kind of ['requests', 'limits']) for (const r of ['cpu', 'memory']) expect(c.resources?.[kind]?.[r]).toBeDefined();
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
  });

  it.each(PART_CARRIERS)('%s drains for longer than a 64 MiB part takes on a slow link, within terminationGracePeriodSeconds', (name) => {
    const deployment = named(objects, 'Deployment', name);
    const pod = deployment.spec.template.spec;
    const container = pod.containers[0];
    const graceMs = Number(containerEnv(objects, container).SHUTDOWN_GRACE_MS);
    expect(graceMs).toBeGreaterThanOrEqual((PART / SLOW_LINK_BYTES_PER_SECOND) * 1000);
    // The kubelet kills at terminationGracePeriodSeconds, counted from before preStop; keep 10 s for closing pools.
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThanOrEqual(preStopDelaySeconds(container) + graceMs / 1000 + 10);
  });

  it.each(SERVICES)('%s waits in preStop so endpoints go before the listener closes', (name) => {
    const container = named(objects, 'Deployment', name).spec.template.spec.containers[0];
    expect(preStopDelaySeconds(container)).toBeGreaterThan(0);
  });

  it('has one Ingress, to the gateway, with TLS, no request buffering and a body limit above a 64 MiB part', () => {
    const ingresses = byKind(objects, 'Ingress');
    expect(ingresses).toHaveLength(1);
    const ingress = ingresses[0]!;
    const a = ingress.metadata.annotations ?? {};
    expect(a['nginx.ingress.kubernetes.io/proxy-request-buffering']).toBe('off');
    // A part plus the multipart-free request's headers (16 KiB is the gateway's header limit).
    expect(nginxSize(a['nginx.ingress.kubernetes.io/proxy-body-size'] ?? '1m')).toBeGreaterThanOrEqual(PART + 16 * 1024);
    // nginx's default is 60 s of silence; a slow upload needs more.
    expect(Number(a['nginx.ingress.kubernetes.io/proxy-read-timeout'])).toBeGreaterThanOrEqual(300);
    expect(Number(a['nginx.ingress.kubernetes.io/proxy-send-timeout'])).toBeGreaterThanOrEqual(300);

    const backends = ingress.spec.rules.flatMap((r: K8sObject) => r.http.paths.map((p: K8sObject) => p.backend.service.name));
    expect(new Set(backends)).toEqual(new Set(['gateway']));
    const hosts = ingress.spec.rules.map((r: K8sObject) => r.host);
    expect(ingress.spec.tls.length).toBeGreaterThan(0);
    for (const tls of ingress.spec.tls) expect(tls.secretName).toMatch(/\S/);
    expect(ingress.spec.tls.flatMap((t: K8sObject) => t.hosts)).toEqual(expect.arrayContaining(hosts));
  });

  describe('NetworkPolicies', () => {
    const policies = byKind(objects, 'NetworkPolicy');
    const podLabelsOf = (name: string) => named(objects, 'Deployment', name).spec.template.metadata.labels as Record<string, string>;
    const ingressRulesFor = (labels: Record<string, string>) =>
      policies
        .filter((p) => selects(p.spec.podSelector, labels) && (p.spec.policyTypes ?? ['Ingress']).includes('Ingress'))
        .flatMap((p) => p.spec.ingress ?? []);

    it('deny all ingress unless a policy allows it', () => {
      const denyAll = policies.find((p) => Object.keys(p.spec.podSelector).length === 0 && p.spec.policyTypes?.includes('Ingress') && !p.spec.ingress?.length);
      expect(denyAll).toBeDefined();
    });

    it('let only the gateway take traffic from outside the namespace', () => {
      for (const name of SERVICES) {
        const outside = ingressRulesFor(podLabelsOf(name)).filter(
          (rule: K8sObject) => !rule.from || rule.from.length === 0 || rule.from.some((peer: K8sObject) => peer.namespaceSelector || peer.ipBlock),
        );
        expect({ name, outside: outside.length > 0 }).toEqual({ name, outside: name === 'gateway' });
      }
    });

    it.each(Object.entries(CALLERS))('let only its callers reach %s', (name, expected) => {
      const peers = ingressRulesFor(podLabelsOf(name)).flatMap((rule: K8sObject) => rule.from ?? []);
      const callers = SERVICES.filter((caller) =>
        peers.some((peer: K8sObject) => peer.podSelector && !peer.namespaceSelector && selects(peer.podSelector, podLabelsOf(caller))),
      );
      expect(new Set(callers)).toEqual(new Set(expected));
      // No peer that would also admit some other pod of the namespace.
      for (const peer of peers) expect(Object.keys(peer.podSelector ?? {}).length).toBeGreaterThan(0);
    });
  });

  if (dir.startsWith('overlays/')) {
    it('puts everything in a namespace that enforces the restricted Pod Security Standard', () => {
      const [namespace] = byKind(objects, 'Namespace');
      expect(namespace?.metadata.labels?.['pod-security.kubernetes.io/enforce']).toBe('restricted');
      for (const o of objects.filter((x) => x.kind !== 'Namespace'))
        expect(`${o.kind}/${o.metadata.name} in ${o.metadata.namespace}`).toBe(`${o.kind}/${o.metadata.name} in ${namespace!.metadata.name}`);
    });

    it('runs images with an explicit tag', () => {
      for (const d of deployments) for (const c of d.spec.template.spec.containers) expect(c.image).toMatch(/:[\w.-]+$/);
      for (const d of deployments) for (const c of d.spec.template.spec.containers) expect(c.image).not.toMatch(/:latest$/);
    });
  }
});
