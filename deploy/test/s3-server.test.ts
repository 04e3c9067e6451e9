// The S3 server of the compose file and of the local overlay: versitygw's official image (MinIO no
// longer publishes community images), posix backend, its root account the content-service's keys,
// and the content-service creating its bucket at start.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { renderKustomization, ROOT, type K8sObject } from './support/render';

const IMAGE = /^versity\/versitygw:v\d+\.\d+\.\d+$/;

describe('deploy/compose.yaml', () => {
  // Interpolation as compose does it for unset variables: ${NAME:-default} → default.
  const text = readFileSync(join(ROOT, 'deploy', 'compose.yaml'), 'utf8').replace(/\$\{\w+:-([^}]*)\}/g, '$1');
  const compose = parse(text, { merge: true }) as { services: Record<string, K8sObject> };
  const s3 = compose.services.versitygw!;
  const content = compose.services['content-service']!.environment as Record<string, string>;

  it('runs versitygw from its pinned official image with the posix backend on a volume', () => {
    expect(s3.image).toMatch(IMAGE);
    expect(s3.environment).toMatchObject({ VGW_BACKEND: 'posix', VGW_BACKEND_ARG: '/data', VGW_PORT: ':9000' });
    expect(s3.volumes).toContainEqual(expect.stringMatching(/^[\w-]+:\/data$/));
  });

  it('gives versitygw the content-service S3 keys as its root account', () => {
    expect({
      ROOT_ACCESS_KEY: s3.environment.ROOT_ACCESS_KEY,
      ROOT_SECRET_KEY: s3.environment.ROOT_SECRET_KEY,
    }).toEqual({
      ROOT_ACCESS_KEY: content.S3_ACCESS_KEY_ID,
      ROOT_SECRET_KEY: content.S3_SECRET_ACCESS_KEY,
    });
  });

  it('points the content-service at it, creating the bucket at start once versitygw is healthy', () => {
    expect(content.S3_ENDPOINT).toBe('http://versitygw:9000');
    expect(content.S3_CREATE_BUCKET).toBe('true');
    expect(s3.healthcheck.test.join(' ')).toContain(`127.0.0.1:9000${s3.environment.VGW_HEALTH}`);
    expect(compose.services['content-service']!.depends_on.versitygw).toEqual({ condition: 'service_healthy' });
  });

  it('uses no MinIO image', () => {
    for (const [name, service] of Object.entries(compose.services))
      expect([name, String(service.image ?? '')]).not.toEqual([name, expect.stringMatching(/minio/i)]);
  });
});

describe('k8s/overlays/local', () => {
  const objects = renderKustomization(join('k8s', 'overlays', 'local'));
  const find = (kind: string, name: string) => objects.find((o) => o.kind === kind && o.metadata.name === name)!;
  const deployment = find('Deployment', 'versitygw');
  const container = deployment.spec.template.spec.containers[0];
  const env = Object.fromEntries((container.env ?? []).map((e: K8sObject) => [e.name, e.value]));

  it('runs versitygw from its pinned official image with the posix backend, probed on its health path', () => {
    expect(container.image).toMatch(IMAGE);
    expect(env).toMatchObject({ VGW_BACKEND: 'posix', VGW_BACKEND_ARG: '/data', VGW_PORT: ':9000' });
    const data = container.volumeMounts.find((m: K8sObject) => m.mountPath === '/data');
    expect(deployment.spec.template.spec.volumes.find((v: K8sObject) => v.name === data.name).emptyDir).toBeDefined();
    for (const probe of ['startupProbe', 'livenessProbe', 'readinessProbe'])
      expect(container[probe].httpGet.path).toBe(env.VGW_HEALTH);
  });

  it('takes its root account from a Secret that create-secrets.sh makes, with the keys it gives the content-service', () => {
    const secret = container.envFrom.map((s: K8sObject) => s.secretRef?.name).find(Boolean);
    const script = readFileSync(join(ROOT, 'k8s', 'overlays', 'local', 'create-secrets.sh'), 'utf8');
    const made = new RegExp(
      `apply secret generic ${secret} --from-literal=ROOT_ACCESS_KEY="\\$(\\w+)" --from-literal=ROOT_SECRET_KEY="\\$(\\w+)"`,
    ).exec(script);
    expect(made).not.toBeNull();
    expect(script).toContain(
      `--from-literal=S3_ACCESS_KEY_ID="$${made![1]}" --from-literal=S3_SECRET_ACCESS_KEY="$${made![2]}"`,
    );
  });

  it('points the content-service at its Service, creating the bucket at start', () => {
    const config = find(
      'ConfigMap',
      find('Deployment', 'content-service').spec.template.spec.containers[0].envFrom[0].configMapRef.name,
    ).data;
    const service = find('Service', 'versitygw');
    expect(config.S3_ENDPOINT).toBe(`http://versitygw:${service.spec.ports[0].port}`);
    expect(config.S3_CREATE_BUCKET).toBe('true');
    expect(service.spec.ports[0].targetPort).toBe('s3');
  });

  it('admits only the platform services to it', () => {
    const labels = deployment.spec.template.metadata.labels;
    const policy = find('NetworkPolicy', 'backing-servers-from-services');
    expect(policy.spec.podSelector.matchExpressions[0].values).toContain(labels['app.kubernetes.io/name']);
  });

  it('uses no MinIO image', () => {
    const images = objects
      .filter((o) => o.kind === 'Deployment')
      .flatMap((d) => d.spec.template.spec.containers.map((c: K8sObject) => c.image));
    expect(images.filter((i: string) => /minio/i.test(i))).toEqual([]);
  });
});
