// The API port answers liveness only; readiness, backend diagnostics and metrics are the admin port's.
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { createLogger } from '@cp/logging';
import { adminApp, serviceApp } from '../src/serviceApp';
import { ServiceMetrics } from '../src/ServiceMetrics';

async function listen(app: Parameters<typeof createServer>[1]): Promise<{ server: Server; base: string }> {
  const server = createServer(app).listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { server, base: `http://127.0.0.1:${(server.address() as { port: number }).port}` };
}

describe('a service app and its admin app', () => {
  const metrics = new ServiceMetrics('test');
  let api: { server: Server; base: string };
  let admin: { server: Server; base: string };

  beforeAll(async () => {
    const app = serviceApp({ logger: createLogger({ service: 'test', level: 'silent' }), metrics });
    app.get('/v1/thing', (_req, res) => void res.json({ ok: true }));
    api = await listen(app);
    admin = await listen(
      adminApp({ metrics, readiness: [{ name: 'mongodb', check: async () => undefined }], isDraining: () => false }),
    );
  });
  afterAll(async () => {
    await Promise.all([api, admin].map(({ server }) => new Promise((r) => server.close(r))));
  });

  it('answers /healthz on the API port and keeps /readyz, /healthz/deps and /metrics off it', async () => {
    expect((await fetch(`${api.base}/healthz`)).status).toBe(200);
    for (const path of ['/readyz', '/healthz/deps', '/metrics'])
      expect([path, (await fetch(`${api.base}${path}`)).status]).toEqual([path, 404]);
  });

  it('serves /healthz, /readyz, /healthz/deps and /metrics on the admin port, and nothing of the API', async () => {
    for (const path of ['/healthz', '/readyz', '/healthz/deps', '/metrics'])
      expect([path, (await fetch(`${admin.base}${path}`)).status]).toEqual([path, 200]);
    expect((await fetch(`${admin.base}/v1/thing`)).status).toBe(404);
  });

  it('counts the API port requests on the admin port metrics', async () => {
    await fetch(`${api.base}/v1/thing`);
    expect(await (await fetch(`${admin.base}/metrics`)).text()).toMatch(
      /^http_request_duration_seconds_count\{[^}]*status="200"[^}]*\} [1-9]/m,
    );
  });
});
