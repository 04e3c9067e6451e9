// CORS at the gateway: preflights answered without any service, grants only for configured
// origins, the headers a page may read exposed, and a disallowed origin passed on unchanged. The
// upstream is a plain loopback server of the test that records what reached it.
import { createServer, request, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLogger } from '@cp/logging';
import { ServiceMetrics } from '@cp/service-kit';
import { buildApp } from '../src/app';
import { loadConfig } from '../src/config';
import { allowedOrigin, CORS_EXPOSED_HEADERS, withVary, type CorsPolicy } from '../src/http/cors';

const OWNER = '11111111-1111-4111-8111-111111111111';
const APP = 'https://app.example.test';
const servers: Server[] = [];
const reached: { method: string; url: string; headers: IncomingHttpHeaders }[] = [];

async function listen(server: Server): Promise<string> {
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** An upstream that answers 201 with a Location, its own Vary, and a CORS grant it must not give. */
async function upstream(): Promise<string> {
  return listen(
    createServer((req, res) => {
      reached.push({ method: req.method!, url: req.url!, headers: req.headers });
      req.resume();
      req.on('end', () => {
        res.setHeader('Location', `/v1/${OWNER}/contents/${OWNER}`);
        res.setHeader('Vary', 'Prefer');
        res.setHeader('Access-Control-Allow-Origin', '*');
        res.setHeader('Content-Type', 'application/json');
        res.statusCode = 201;
        res.end('{"id":"x"}');
      });
    }),
  );
}

async function gateway(cors: CorsPolicy | undefined): Promise<string> {
  const app = buildApp({
    logger: createLogger({ service: 'gateway-test', level: 'silent' }),
    metrics: new ServiceMetrics('gateway-test'),
    upstreams: { content: await upstream() },
    upstreamTimeoutMs: 10_000,
    cors,
  });
  return listen(createServer(app));
}

/** A raw request (fetch would refuse to send Origin and the preflight headers itself). */
function send(
  base: string,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string,
): Promise<{ status: number; headers: IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}${path}`, { method, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const policy: CorsPolicy = { origins: [APP], maxAgeSeconds: 600, allowCredentials: false };

afterAll(async () => {
  for (const server of servers) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

beforeEach(() => {
  reached.length = 0;
});

describe('CORS at the gateway', () => {
  it('answers a preflight from an allowed origin itself, with methods, headers and max age', async () => {
    const base = await gateway(policy);
    const res = await send(base, 'OPTIONS', `/v1/${OWNER}/contents`, {
      origin: APP,
      'access-control-request-method': 'PUT',
      'access-control-request-headers': 'authorization, content-range, content-type',
    });
    expect(res.status).toBe(204);
    expect(res.headers['access-control-allow-origin']).toBe(APP);
    expect(res.headers['access-control-allow-methods']).toContain('PUT');
    expect(res.headers['access-control-allow-methods']).toContain('PATCH');
    const allowed = String(res.headers['access-control-allow-headers']).toLowerCase().split(', ');
    expect(allowed).toEqual(
      expect.arrayContaining(['authorization', 'content-range', 'content-type', 'upload-offset']),
    );
    expect(res.headers['access-control-max-age']).toBe('600');
    expect(res.headers['access-control-allow-credentials']).toBeUndefined();
    expect(res.headers.vary).toBe('Origin, Access-Control-Request-Method, Access-Control-Request-Headers');
    expect(reached).toHaveLength(0);
  });

  it('keeps the connection of a bodiless preflight, and closes one that came with a body', async () => {
    const base = await gateway(policy);
    const head = { origin: APP, 'access-control-request-method': 'PUT' };
    const plain = await send(base, 'OPTIONS', `/v1/${OWNER}/contents`, head);
    expect([plain.status, plain.headers.connection, plain.headers['content-length']]).toEqual([
      204,
      'keep-alive',
      undefined,
    ]);
    const withBody = await send(base, 'OPTIONS', `/v1/${OWNER}/contents`, { ...head, 'content-length': '4' }, 'abcd');
    expect([withBody.status, withBody.headers.connection]).toEqual([204, 'close']);
    expect(reached).toHaveLength(0);
  });

  it('answers a preflight from another origin with no grant, and calls no service either', async () => {
    const base = await gateway(policy);
    const res = await send(base, 'OPTIONS', `/v1/${OWNER}/contents`, {
      origin: 'https://evil.example.test',
      'access-control-request-method': 'DELETE',
    });
    expect(res.status).toBe(204);
    expect(Object.keys(res.headers).filter((h) => h.startsWith('access-control-'))).toEqual([]);
    expect(reached).toHaveLength(0);
  });

  it('grants an allowed origin on a proxied answer, exposes its headers, and drops the service’s own grant', async () => {
    const base = await gateway(policy);
    const res = await send(
      base,
      'POST',
      `/v1/${OWNER}/contents`,
      { origin: APP, authorization: 'Bearer x', 'content-type': 'text/plain', 'content-length': '5' },
      'hello',
    );
    expect(res.status).toBe(201);
    expect(res.headers['access-control-allow-origin']).toBe(APP);
    const exposed = String(res.headers['access-control-expose-headers']).split(', ');
    expect(exposed).toEqual(
      expect.arrayContaining(['Location', 'ETag', 'Repr-Digest', 'Upload-Offset', 'X-Received-Ranges']),
    );
    expect(res.headers.vary).toBe('Prefer, Origin');
    expect(reached).toHaveLength(1);
    expect(reached[0]!.headers.origin).toBe(APP);
  });

  it('passes a request from another origin on unchanged, and its answer grants nothing', async () => {
    const base = await gateway(policy);
    const res = await send(
      base,
      'POST',
      `/v1/${OWNER}/contents`,
      { origin: 'https://evil.example.test', authorization: 'Bearer x', 'content-length': '5' },
      'hello',
    );
    expect(res.status).toBe(201);
    expect(Object.keys(res.headers).filter((h) => h.startsWith('access-control-'))).toEqual([]);
    expect(res.headers.vary).toBe('Prefer, Origin');
    expect(reached).toHaveLength(1);
    expect(reached[0]!.headers.authorization).toBe('Bearer x');
  });

  it('grants the gateway’s own answers too (an error a page must be able to read)', async () => {
    const base = await gateway(policy);
    const res = await send(base, 'GET', '/nowhere', { origin: APP });
    expect(res.status).toBe(404);
    expect(res.headers['access-control-allow-origin']).toBe(APP);
    expect(res.headers['access-control-expose-headers']).toContain('X-Error-Id');
    expect(reached).toHaveLength(0);
  });

  it('with credentials allowed, says so to an allowed origin only', async () => {
    const base = await gateway({ ...policy, allowCredentials: true });
    const ok = await send(base, 'OPTIONS', '/v1/x', { origin: APP, 'access-control-request-method': 'GET' });
    expect(ok.headers['access-control-allow-credentials']).toBe('true');
    const other = await send(base, 'OPTIONS', '/v1/x', {
      origin: 'https://b.test',
      'access-control-request-method': 'GET',
    });
    expect(other.headers['access-control-allow-credentials']).toBeUndefined();
  });

  it('is off without origins: an OPTIONS goes on to the service as before, and nothing is granted', async () => {
    const base = await gateway({ ...policy, origins: [] });
    const res = await send(base, 'OPTIONS', `/v1/${OWNER}/contents`, {
      origin: APP,
      'access-control-request-method': 'PUT',
    });
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
    expect(res.headers.vary).toBe('Prefer');
    expect(reached).toHaveLength(1);
  });
});

describe('the CORS policy', () => {
  it('matches origins exactly, and `*` any well-formed origin but "null"', () => {
    expect(allowedOrigin(policy, APP)).toBe(APP);
    expect(allowedOrigin(policy, `${APP}:443`)).toBeNull();
    expect(allowedOrigin(policy, 'http://app.example.test')).toBeNull();
    expect(allowedOrigin(policy, undefined)).toBeNull();
    const any = { ...policy, origins: ['*'] };
    expect(allowedOrigin(any, 'http://localhost:5173')).toBe('http://localhost:5173');
    expect(allowedOrigin(any, 'null')).toBeNull();
    expect(allowedOrigin(any, 'https://a.test/path')).toBeNull();
  });

  it('merges Vary without repeating a name', () => {
    expect(withVary('Prefer, origin', ['Origin'])).toBe('Prefer, origin');
    expect(withVary(undefined, ['Origin'])).toBe('Origin');
    expect(withVary('*', ['Origin'])).toBe('*');
  });

  it('exposes each header once', () => {
    expect(new Set(CORS_EXPOSED_HEADERS.map((h) => h.toLowerCase())).size).toBe(CORS_EXPOSED_HEADERS.length);
  });

  it('refuses origins written other than as origins, and `*` with credentials', () => {
    const base = { CONTENT_SERVICE_URL: 'http://127.0.0.1:1' };
    expect(loadConfig({ ...base, CORS_ALLOWED_ORIGINS: `${APP}, http://localhost:5173` }).CORS_ALLOWED_ORIGINS).toEqual(
      [APP, 'http://localhost:5173'],
    );
    expect(() => loadConfig({ ...base, CORS_ALLOWED_ORIGINS: `${APP}/` })).toThrow(/no trailing slash/);
    expect(() => loadConfig({ ...base, CORS_ALLOWED_ORIGINS: 'app.example.test' })).toThrow(/not an origin/);
    expect(() => loadConfig({ ...base, CORS_ALLOWED_ORIGINS: 'ftp://a.test' })).toThrow(/http or https/);
    expect(() => loadConfig({ ...base, CORS_ALLOWED_ORIGINS: '*', CORS_ALLOW_CREDENTIALS: 'true' })).toThrow(
      /CORS_ALLOW_CREDENTIALS/,
    );
    expect(loadConfig(base).CORS_ALLOWED_ORIGINS).toEqual([]);
  });
});
