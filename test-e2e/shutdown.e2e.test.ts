import { randomBytes, randomUUID } from 'node:crypto';
import { request, type IncomingMessage } from 'node:http';
import { connect } from 'node:net';
import { join } from 'node:path';
import { P, rangeOf, sha256 } from './support/http';
import { contentReplicaEnv, startService, type ServiceHandle } from './support/replicas';
import { testStack, tokenFor } from './support/stack';

/** Settings of a content-service replica sharing the test stack's database and bucket. */
function replicaEnv(): Record<string, string> {
  // Long enough that the grace period is never what lets the part finish in this test.
  return contentReplicaEnv({ SHUTDOWN_GRACE_MS: '300000' });
}

/** Resolves true when a TCP connection to the port is refused, false when one is accepted. */
function refusesConnections(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(true));
  });
}

async function waitUntil(what: string, probe: () => Promise<boolean>, attempts = 200): Promise<void> {
  for (let i = 0; i < attempts; i++) {
    if (await probe()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`gave up waiting until ${what}`);
}

/** An upload whose body the test writes piece by piece, so that it can act between the pieces. */
function openUpload(url: string, headers: Record<string, string>) {
  const req = request(url, { method: 'POST', headers, agent: false });
  const response = new Promise<{ res: IncomingMessage; body: string }>((resolve, reject) => {
    req.once('error', reject);
    req.once('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.once('end', () => resolve({ res, body: Buffer.concat(chunks).toString('utf8') }));
      res.once('error', reject);
    });
  });
  const write = (chunk: Buffer): Promise<void> =>
    new Promise((resolve, reject) => {
      req.write(chunk, (error) => (error ? reject(error) : resolve()));
    });
  return { write, end: () => req.end(), response };
}

describe('a content-service replica receiving SIGTERM in the middle of a 64 MiB part', () => {
  const replicas: ServiceHandle[] = [];
  afterAll(async () => {
    await Promise.all(replicas.map((r) => r.stop('SIGKILL')));
  });

  it('finishes the part, refuses new connections, exits 0, and another replica takes the next part', async () => {
    const logDir = join(testStack().logDir, 'shutdown');
    const a = await startService('content-service', { env: replicaEnv(), logDir });
    replicas.push(a);
    const b = await startService('content-service', { env: replicaEnv(), logDir });
    replicas.push(b);

    const owner = randomUUID();
    const token = await tokenFor([owner]);
    const total = 2 * P;
    const data = randomBytes(total);
    const firstPart = data.subarray(0, P);

    const upload = openUpload(`${a.url}/v1/${owner}/contents`, {
      authorization: `Bearer ${token}`,
      'content-type': 'application/octet-stream',
      'content-range': rangeOf(0, P, total),
      'content-length': String(P),
    });
    const chunk = 1024 * 1024;
    const half = P / 2;
    for (let at = 0; at < half; at += chunk) await upload.write(firstPart.subarray(at, at + chunk));

    // Half of the part is on its way; A is told to stop.
    expect(process.kill(a.pid, 'SIGTERM')).toBe(true);
    await waitUntil('replica A stops listening', () => refusesConnections(a.port));
    // A is still running: it is draining the part in flight, not dead.
    expect(() => process.kill(a.pid, 0)).not.toThrow();

    for (let at = half; at < P; at += chunk) await upload.write(firstPart.subarray(at, at + chunk));
    upload.end();
    const { res, body } = await upload.response;
    expect({ status: res.statusCode, body }).toEqual({
      status: 201,
      body: expect.stringMatching(/^\{"id":"[0-9a-f-]{36}"\}$/),
    });
    const { id } = JSON.parse(body) as { id: string };

    expect(await a.exited).toBe(0);
    expect(await refusesConnections(a.port)).toBe(true);

    // The next request goes to B, which sees the part A stored and completes the content.
    const second = await fetch(`${b.url}/v1/${owner}/contents/${id}`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${token}`, 'content-range': rangeOf(P, total, total) },
      body: data.subarray(P),
    });
    expect(second.status).toBe(201);
    expect(await second.json()).toEqual({ id, content: { id }, 'is-completed': true });

    const whole = await fetch(`${b.url}/v1/${owner}/contents/${id}`, { headers: { authorization: `Bearer ${token}` } });
    expect(whole.status).toBe(200);
    expect(sha256(Buffer.from(await whole.arrayBuffer()))).toBe(sha256(data));
  });
});

describe('a gateway replica receiving SIGTERM in the middle of a 64 MiB part it relays', () => {
  let gateway: ServiceHandle | undefined;
  afterAll(async () => {
    await gateway?.stop('SIGKILL');
  });

  it('relays the part to its end, refuses new connections meanwhile, and exits 0', async () => {
    const stack = testStack();
    const contentUrl = stack.services['content-service']!.url;
    gateway = await startService('gateway', {
      env: { LOG_LEVEL: 'info', CONTENT_SERVICE_URL: contentUrl, SHUTDOWN_GRACE_MS: '300000' },
      logDir: join(stack.logDir, 'shutdown'),
    });
    const owner = randomUUID();
    const token = await tokenFor([owner]);
    const part = randomBytes(P);
    const upload = openUpload(`${gateway.url}/v1/${owner}/contents`, {
      authorization: `Bearer ${token}`,
      'content-range': rangeOf(0, P, 2 * P),
      'content-length': String(P),
    });
    const chunk = 1024 * 1024;
    for (let at = 0; at < P / 2; at += chunk) await upload.write(part.subarray(at, at + chunk));

    expect(process.kill(gateway.pid, 'SIGTERM')).toBe(true);
    await waitUntil('the gateway stops listening', () => refusesConnections(gateway!.port));
    expect(() => process.kill(gateway!.pid, 0)).not.toThrow();

    for (let at = P / 2; at < P; at += chunk) await upload.write(part.subarray(at, at + chunk));
    upload.end();
    const { res, body } = await upload.response;
    expect({ status: res.statusCode, body }).toEqual({
      status: 201,
      body: expect.stringMatching(/^\{"id":"[0-9a-f-]{36}"\}$/),
    });
    expect(await gateway.exited).toBe(0);

    // The part is really stored: the status endpoint of the content-service says so.
    const { id } = JSON.parse(body) as { id: string };
    const status = await fetch(`${contentUrl}/v1/${owner}/contents/${id}`, {
      method: 'HEAD',
      headers: { authorization: `Bearer ${token}` },
    });
    expect(status.status).toBe(200);
    expect(status.headers.get('x-received-ranges')).toBe(`0-${P - 1}`);
  });
});
