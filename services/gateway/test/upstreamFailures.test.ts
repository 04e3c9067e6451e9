// What the gateway answers when its upstream fails, as its proxy (http-proxy-middleware) reports
// it: a silent upstream is a 504 upstreamTimeout, a refused one a 503 serviceUnavailable, each
// once, in the contract's format. The upstreams are plain loopback servers of the test.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLogger } from '@cp/logging';
import { ServiceMetrics } from '@cp/service-kit';
import { buildApp } from '../src/app';

const OWNER = '11111111-1111-4111-8111-111111111111';
const servers: Server[] = [];

async function listen(server: Server): Promise<string> {
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function gatewayTo(content: string, upstreamTimeoutMs: number): Promise<string> {
  const app = buildApp({
    logger: createLogger({ service: 'gateway-test', level: 'silent' }),
    metrics: new ServiceMetrics('gateway-test'),
    upstreams: { content: content },
    upstreamTimeoutMs,
    readiness: [],
    isDraining: () => false,
  });
  return listen(createServer(app));
}

afterAll(async () => {
  for (const server of servers) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

describe('the gateway when its upstream fails', () => {
  it('answers 504 upstreamTimeout when the upstream stays silent past UPSTREAM_TIMEOUT_MS', async () => {
    const silent = await listen(createServer(() => undefined));
    const gateway = await gatewayTo(silent, 300);
    const started = Date.now();
    const res = await fetch(`${gateway}/v1/${OWNER}/contents/${OWNER}`, { headers: { authorization: 'Bearer x' } });
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(res.status).toBe(504);
    expect(res.headers.get('retry-after')).toBe('5');
    expect(res.headers.get('x-error-id')).toBe('urn:error:contents:upstreamTimeout');
    expect(await res.json()).toMatchObject({ id: 'urn:error:contents:upstreamTimeout', 'status-code': 504 });
  });

  it('gives a silent session-service up at its own, shorter limit, in the {Code, Message} format', async () => {
    const silent = await listen(createServer(() => undefined));
    const app = buildApp({
      logger: createLogger({ service: 'gateway-test', level: 'silent' }),
      metrics: new ServiceMetrics('gateway-test'),
      upstreams: { content: silent, sessions: silent },
      upstreamTimeoutMs: 60_000,
      signInUpstreamTimeoutMs: 300,
    });
    const gateway = await listen(createServer(app));
    const started = Date.now();
    const res = await fetch(`${gateway}/sessions/v5.13/sessions/refresh`, { method: 'POST' });
    console.log(`a silent session-service answered 504 after ${Date.now() - started} ms`);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(res.status).toBe(504);
    expect(Object.keys((await res.json()) as object).sort()).toEqual(['Code', 'Message']);
  });

  it('answers 503 serviceUnavailable when the upstream refuses the connection', async () => {
    const closed = createServer();
    const url = await listen(closed);
    await new Promise((resolve) => closed.close(resolve));
    const gateway = await gatewayTo(url, 5_000);
    const res = await fetch(`${gateway}/v1/${OWNER}/contents/${OWNER}`, { headers: { authorization: 'Bearer x' } });
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('5');
    expect(res.headers.get('x-error-id')).toBe('urn:error:contents:serviceUnavailable');
    expect(await res.json()).toMatchObject({ id: 'urn:error:contents:serviceUnavailable', 'status-code': 503 });
  });

  it('streams what the upstream answers, with its exact length', async () => {
    const body = Buffer.alloc(3 * 1024 * 1024 + 7, 1);
    const upstream = await listen(
      createServer((req, res) => {
        let received = 0;
        req.on('data', (chunk: Buffer) => (received += chunk.length));
        req.on('end', () => {
          res.writeHead(200, { 'content-length': String(body.length), 'x-received': String(received) });
          res.end(body);
        });
      }),
    );
    const gateway = await gatewayTo(upstream, 5_000);
    const sent = Buffer.alloc(1024 * 1024 + 3, 2);
    const res = await fetch(`${gateway}/v1/${OWNER}/contents/${OWNER}`, {
      method: 'PUT',
      headers: {
        authorization: 'Bearer x',
        'content-range': `bytes 0-${sent.length - 1}/${sent.length}`,
        'content-type': 'application/octet-stream',
      },
      body: sent,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-received')).toBe(String(sent.length));
    expect(res.headers.get('content-length')).toBe(String(body.length));
    expect(Buffer.from(await res.arrayBuffer()).equals(body)).toBe(true);
  });
});
