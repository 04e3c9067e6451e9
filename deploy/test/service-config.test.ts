// The settings the deployment files give each service must pass that service's own start-up
// validation (services/<name>/src/config.ts): a renamed or missing variable fails here, not in a
// pod that never becomes ready.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { renderKustomization, ROOT, type K8sObject } from './support/render';

const SERVICES = ['gateway', 'content-service', 'auth-service', 'session-service'] as const;
type LoadConfig = (source: NodeJS.ProcessEnv) => unknown;

function loaderOf(service: string): LoadConfig | null {
  const file = join(ROOT, 'services', service, 'src', 'config.ts');
  if (!existsSync(file)) return null;
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded per service at run time
  return (require(file) as { loadConfig?: LoadConfig }).loadConfig ?? null;
}

function readEnvFile(file: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const m = /^([A-Z][A-Z0-9_]*)=(.*)$/.exec(line.trim());
    if (m) env[m[1]!] = m[2]!;
  }
  return env;
}

/** What a container of the Deployment sees: its ConfigMaps, and its Secrets as the example files describe them. */
function k8sEnv(objects: K8sObject[], service: string): Record<string, string> {
  const deployment = objects.find((o) => o.kind === 'Deployment' && o.metadata.name === service)!;
  const env: Record<string, string> = {};
  for (const source of deployment.spec.template.spec.containers[0].envFrom ?? []) {
    if (source.configMapRef)
      Object.assign(
        env,
        objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === source.configMapRef.name)!.data,
      );
    if (source.secretRef) {
      const example = join(ROOT, 'k8s', 'secrets', `${source.secretRef.name}.env.example`);
      expect({ secret: source.secretRef.name, documented: existsSync(example) }).toEqual({
        secret: source.secretRef.name,
        documented: true,
      });
      Object.assign(env, readEnvFile(example));
    }
  }
  for (const variable of deployment.spec.template.spec.containers[0].env ?? []) {
    const ref = variable.valueFrom?.secretKeyRef;
    if (!ref) {
      env[variable.name] = variable.value;
      continue;
    }
    const example = join(ROOT, 'k8s', 'secrets', `${ref.name}.env.example`);
    const value = existsSync(example) ? readEnvFile(example)[ref.key] : undefined;
    expect({ secret: ref.name, key: ref.key, documented: value !== undefined }).toEqual({
      secret: ref.name,
      key: ref.key,
      documented: true,
    });
    env[variable.name] = value!;
  }
  return env;
}

describe.each(readdirSync(join(ROOT, 'k8s', 'overlays')))('k8s overlay %s', (overlay) => {
  const objects = renderKustomization(join('k8s', 'overlays', overlay));
  for (const service of SERVICES) {
    const load = loaderOf(service);
    (load ? it : it.skip)(`gives ${service} a configuration its config.ts accepts`, () => {
      expect(() => load!(k8sEnv(objects, service))).not.toThrow();
    });
  }
});

describe('deploy/compose.yaml', () => {
  // Interpolation as compose does it for unset variables: ${NAME:-default} → default.
  const text = readFileSync(join(ROOT, 'deploy', 'compose.yaml'), 'utf8').replace(/\$\{\w+:-([^}]*)\}/g, '$1');
  const compose = parse(text, { merge: true }) as { services: Record<string, Record<string, any>> }; // eslint-disable-line @typescript-eslint/no-explicit-any -- compose file

  it.each(SERVICES)(
    'builds %s from deploy/Dockerfile with SERVICE set to it, read-only, as a non-root user',
    (service) => {
      const s = compose.services[service]!;
      expect(s.build).toEqual({ context: '..', dockerfile: 'deploy/Dockerfile', args: { SERVICE: service } });
      expect(s.read_only).toBe(true);
      expect(s.user).toMatch(/^[1-9]\d*(:\d+)?$/);
      expect(s.tmpfs).toContain('/tmp');
      expect(s.cap_drop).toContain('ALL');
    },
  );

  it('runs MongoDB, Redis and an S3-compatible server, and publishes only the gateway', () => {
    expect(Object.keys(compose.services)).toEqual(expect.arrayContaining(['mongodb', 'redis', 'versitygw']));
    const published = Object.entries(compose.services)
      .filter(([, s]) => s.ports?.length)
      .map(([name]) => name);
    expect(published).toEqual(['gateway']);
  });

  for (const service of SERVICES) {
    const load = loaderOf(service);
    (load ? it : it.skip)(`gives ${service} a configuration its config.ts accepts`, () => {
      expect(() => load!(compose.services[service]!.environment)).not.toThrow();
    });
  }
});
