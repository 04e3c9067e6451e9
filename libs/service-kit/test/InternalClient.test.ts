import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ServiceError } from '@cp/errors';
import { InternalClient, INTERNAL_SECRET_HEADER } from '@cp/service-kit';

describe('InternalClient', () => {
  let server: Server;
  let baseUrl: string;
  const seen: Array<{ url?: string; secret?: string | string[]; body: string }> = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        seen.push({ url: req.url, secret: req.headers[INTERNAL_SECRET_HEADER], body });
        if (req.url === '/internal/slow') return void setTimeout(() => res.end('{}'), 1_000);
        res.writeHead(201, { 'content-type': 'application/json' }).end('{"ok":true}');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  const message = 'the peer does not answer; retry later';
  const unavailable = (cause?: unknown) => ServiceError.of('ServiceUnavailable', message, { cause });

  it('posts JSON with the caller secret and hands back status and body', async () => {
    const client = new InternalClient({ baseUrl, secret: 's'.repeat(16), timeoutMs: 2_000, unavailable });
    expect(await client.post('/internal/things', { a: 1 })).toEqual({ status: 201, body: '{"ok":true}' });
    expect(seen.at(-1)).toEqual({ url: '/internal/things', secret: 's'.repeat(16), body: '{"a":1}' });
  });

  it('answers 503 with the given code when the called service times out or cannot be reached', async () => {
    const slow = new InternalClient({ baseUrl, timeoutMs: 100, unavailable });
    await expect(slow.post('/internal/slow', {})).rejects.toMatchObject({
      status: 503,
      code: 'ServiceUnavailable',
      message,
    });
    const nobody = new InternalClient({ baseUrl: 'http://127.0.0.1:1', timeoutMs: 1_000, unavailable });
    const error = await nobody.post('/internal/things', {}).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ServiceError);
    expect(error).toMatchObject({ status: 503, code: 'ServiceUnavailable' });
  });
});
