// Readiness follows the process, not its backends; the backends' state is a diagnostic.
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import express from 'express';
import { healthRoutes } from '../src/healthRoutes';
import { ServiceMetrics } from '../src/ServiceMetrics';

describe('health routes', () => {
  let server: Server;
  let base: string;
  let draining = false;
  let mongoUp = true;

  beforeAll(async () => {
    const app = express();
    app.use(
      healthRoutes({
        metrics: new ServiceMetrics('test'),
        isDraining: () => draining,
        checks: [
          {
            name: 'mongodb',
            check: async () => {
              if (!mongoUp) throw new Error('down');
            },
          },
          { name: 's3', check: async () => undefined },
        ],
      }),
    );
    server = createServer(app).listen(0, '127.0.0.1');
    await once(server, 'listening');
    base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  afterAll(async () => {
    await new Promise((r) => server.close(r));
  });
  afterEach(() => {
    draining = false;
    mongoUp = true;
  });

  it('stays ready and alive while a backend is down, and names it on /healthz/deps and /metrics', async () => {
    mongoUp = false;
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
    const deps = await fetch(`${base}/healthz/deps`);
    expect(deps.status).toBe(503);
    expect(await deps.json()).toEqual({ status: 'degraded', checks: { mongodb: 'unavailable', s3: 'ok' } });
    const verbose = await fetch(`${base}/readyz?verbose`);
    expect(verbose.status).toBe(200);
    expect(await verbose.json()).toEqual({ status: 'ready', checks: { mongodb: 'unavailable', s3: 'ok' } });
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toMatch(/backend_up\{backend="mongodb",service="test"\} 0/);
    expect(metrics).toMatch(/backend_up\{backend="s3",service="test"\} 1/);
  });

  it('is unready while draining, alive all the same', async () => {
    draining = true;
    expect((await fetch(`${base}/readyz`)).status).toBe(503);
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
  });

  it('answers /healthz/deps 200 when every backend answers', async () => {
    const deps = await fetch(`${base}/healthz/deps`);
    expect(deps.status).toBe(200);
    expect(await deps.json()).toEqual({ status: 'ok', checks: { mongodb: 'ok', s3: 'ok' } });
  });
});
