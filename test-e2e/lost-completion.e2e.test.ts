// S3 answering "completed" without an object: never acknowledged as stored. A stack of its own
// sends its S3 calls through a proxy that answers or cuts chosen ones, in front of an S3 server of
// its own that the test kills in the middle of a completion. A content whose S3 upload was lost
// is refused until it has been lost for a completion lease, then begins again: HEAD shows its
// ranges missing, 409 uploadRestarted tells the client to send them, and once sent the content is
// ready with the bytes sent. No 201, no event and no receipt before S3 shows the object.
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ContentClient } from '@cp/client';
import { DevKeys } from '@cp/credentials';
import { startPrivateBacking, type PrivateBacking } from './support/privateBacking';
import { completionAnswer, isCompletion, S3FaultProxy } from './support/s3FaultProxy';
import { testStack } from './support/stack';

// eslint-disable-next-line @typescript-eslint/no-require-imports -- the plain-JS stack launcher
const { startStack, freePort } = require('../tools/devstack/stack') as {
  startStack: (opts: Record<string, unknown>) => Promise<{ gatewayUrl: string; stop: () => Promise<void> }>;
  freePort: () => Promise<number>;
};

const MiB = 1024 * 1024;
const P = 64 * MiB;
const LEASE_S = 2;
const sha256 = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

interface Reply {
  status: number;
  headers: Headers;
  body: Buffer;
}

describe('a completion S3 answers without an object', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-lost-'));
  let backing: PrivateBacking;
  let proxy: S3FaultProxy;
  let stack: Awaited<ReturnType<typeof startStack>>;
  const owner = randomUUID();
  let auth: Record<string, string>;

  const v1 = (id?: string): string => `${stack.gatewayUrl}/v1/${owner}/contents${id ? `/${id}` : ''}`;
  async function call(url: string, init: RequestInit = {}): Promise<Reply> {
    const res = await fetch(url, {
      ...init,
      headers: { ...auth, ...init.headers },
      signal: AbortSignal.timeout(60_000),
    });
    return { status: res.status, headers: res.headers, body: Buffer.from(await res.arrayBuffer()) };
  }
  const send = (id: string | null, bytes: Buffer, a: number, total: number) =>
    call(v1(id ?? undefined), {
      method: id ? 'PUT' : 'POST',
      body: bytes.subarray(a, a + (rangeEnd(a, total) - a + 1)),
      headers: { 'content-range': `bytes ${a}-${rangeEnd(a, total)}/${total}` },
    });
  /** The content is cut at every 64 MiB boundary and once more in its first part, at 1 MiB. */
  const rangeEnd = (a: number, total: number): number =>
    a === 0 ? Math.min(MiB, total) - 1 : Math.min(Math.ceil((a + 1) / P) * P, total) - 1;
  const starts = (total: number): number[] => {
    const out = [0];
    while (rangeEnd(out[out.length - 1]!, total) < total - 1) out.push(rangeEnd(out[out.length - 1]!, total) + 1);
    return out;
  };
  const errorId = (r: Reply): string => r.headers.get('x-error-id') ?? JSON.parse(r.body.toString()).id;

  /** Sends every range but the first, which it keeps for last; returns the content id and the last range's start. */
  async function sendAllButLast(bytes: Buffer): Promise<{ id: string; last: number }> {
    const [first, ...rest] = starts(bytes.length).reverse();
    const created = await send(null, bytes, first!, bytes.length);
    expect(created.status).toBe(201);
    const id = (JSON.parse(created.body.toString()) as { id: string }).id;
    for (const a of rest.slice(0, -1)) expect((await send(id, bytes, a, bytes.length)).status).toBe(200);
    return { id, last: rest[rest.length - 1]! };
  }

  /** Sends the range again until it is no longer refused for a while (503); each answer's id, in order. */
  async function retryUntilAnswered(id: string, bytes: Buffer, a: number): Promise<{ answers: string[]; last: Reply }> {
    const answers: string[] = [];
    const deadline = Date.now() + 30_000;
    for (;;) {
      const r = await send(id, bytes, a, bytes.length);
      answers.push(r.status >= 400 ? `${r.status} ${errorId(r)}` : `${r.status}`);
      if (r.status !== 503 || Date.now() > deadline) return { answers, last: r };
      await new Promise((resolve) => setTimeout(resolve, 250 * Number(r.headers.get('retry-after') ?? 1)));
    }
  }

  /** After 409 uploadRestarted: sends every range HEAD shows missing, and checks the content is the bytes. */
  async function resumeAndCheck(id: string, bytes: Buffer): Promise<void> {
    const head = await call(v1(id), { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('x-upload-state')).toBe('uploading');
    const received = head.headers.get('x-received-ranges') ?? '';
    const held = received
      .split(',')
      .filter(Boolean)
      .map((r) => r.trim().split('-').map(Number) as [number, number]);
    let completed = 0;
    const retried: string[] = [];
    for (const a of starts(bytes.length)) {
      const b = rangeEnd(a, bytes.length);
      if (held.some(([x, y]) => x <= a && y >= b)) continue;
      // A 503 asks the client to retry, as a client would (within 30 s): S3 has just come back.
      const { answers, last: r } = await retryUntilAnswered(id, bytes, a);
      if (answers.length > 1) retried.push(`range ${a}: ${answers.join(', ')}`);
      expect([200, 201]).toContain(r.status);
      if (r.status === 201) completed++;
    }
    if (retried.length) console.log(`resumed after retries: ${retried.join('; ')}`);
    expect(completed).toBe(1);
    const back = await call(v1(id));
    expect(back.status).toBe(200);
    expect(sha256(back.body)).toBe(sha256(bytes));
  }

  beforeAll(async () => {
    const ports = { s3: await freePort(), mongodb: await freePort(), redis: await freePort() };
    backing = await startPrivateBacking(dir, ports);
    proxy = await new S3FaultProxy(ports.s3).start();
    stack = await startStack({
      prefix: `lost${Date.now().toString(36)}`,
      logDir: join(dir, 'logs'),
      keysDir: testStack().keysDir,
      env: { ...backing.env, S3_ENDPOINT: proxy.url, COMPLETION_LEASE_SECONDS: String(LEASE_S), LOG_LEVEL: 'warn' },
    });
    auth = { authorization: `Bearer ${await new DevKeys(testStack().keysDir).mint({ owners: [owner] })}` };
  }, 120_000);

  afterAll(async () => {
    await stack?.stop();
    await proxy?.stop();
    await backing?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('refuses, then begins again, an upload whose completion S3 answered without making the object', async () => {
    const bytes = randomBytes(3 * MiB);
    const { id, last } = await sendAllButLast(bytes);
    let faked = 0;
    proxy.decide = (c) => (isCompletion(c) && faked++ < 1_000 ? completionAnswer(c) : { kind: 'pass' });
    const { answers, last: refused } = await retryUntilAnswered(id, bytes, last);
    proxy.decide = () => ({ kind: 'pass' });
    console.log(`answers to the last range while S3 answers completions without objects: ${answers.join(', ')}`);
    expect(answers.filter((a) => a.startsWith('2'))).toEqual([]); // never 201: S3 showed no object
    expect(answers[0]).toBe('503 urn:error:contents:contentCompleting');
    expect(refused.status).toBe(409);
    expect(errorId(refused)).toBe('urn:error:contents:uploadRestarted');
    expect((await call(v1(id))).status).toBe(409); // not ready, not lost
    expect((await call(`${v1(id)}/receipt`)).status).toBe(409);
    await resumeAndCheck(id, bytes);
  }, 120_000);

  it('answers a part S3 refuses with NoSuchUpload as a lost upload, never 500', async () => {
    const total = P + MiB;
    const bytes = randomBytes(total);
    const created = await send(null, bytes, 0, total);
    expect(created.status).toBe(201);
    const id = (JSON.parse(created.body.toString()) as { id: string }).id;
    const noSuchUpload =
      '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>NoSuchUpload</Code>' +
      '<Message>The specified multipart upload does not exist.</Message></Error>';
    // Every UploadPart of the aligned 64 MiB part is refused, as the S3 server does for a lost upload.
    proxy.decide = (c) =>
      c.method === 'PUT' && c.query.has('uploadId')
        ? { kind: 'answer', status: 404, body: noSuchUpload }
        : { kind: 'pass' };
    const { answers, last: refused } = await retryUntilAnswered(id, bytes, P);
    proxy.decide = () => ({ kind: 'pass' });
    console.log(`answers to a part S3 refuses with NoSuchUpload: ${answers.join(', ')}`);
    expect(answers.filter((a) => !a.startsWith('503 '))).toEqual(['409 urn:error:contents:uploadRestarted']);
    expect(refused.status).toBe(409);
    await resumeAndCheck(id, bytes);
  }, 120_000);

  it('has the client library send a file again by itself when its upload began again', async () => {
    const bytes = randomBytes(3 * MiB + 5);
    const file = join(dir, 'restarted.bin');
    writeFileSync(file, bytes);
    let faked = 0;
    proxy.decide = (c) => (isCompletion(c) && faked++ < 1_000 ? completionAnswer(c) : { kind: 'pass' });
    const client = new ContentClient({
      baseUrl: stack.gatewayUrl,
      credentials: { kind: 'bearer', token: auth.authorization!.slice('Bearer '.length) },
      partSize: MiB,
    });
    const restarts: string[] = [];
    let id: string;
    try {
      // Completions answered without an object until the upload has begun again once.
      const sending = client.uploadFile(file, {
        owner,
        concurrency: 2,
        onContentId: (cid) => restarts.push(cid),
      });
      const stopFaking = setInterval(() => {
        if (restarts.length > 1) proxy.decide = () => ({ kind: 'pass' });
      }, 20);
      id = await sending.finally(() => clearInterval(stopFaking));
    } finally {
      proxy.decide = () => ({ kind: 'pass' });
      client.close();
    }
    console.log(`client: ${faked} completions answered without an object; content id given ${restarts.length} times`);
    expect(faked).toBeGreaterThan(0);
    expect(new Set(restarts)).toEqual(new Set([id]));
    expect(restarts.length).toBe(2); // the first send, and once more after the upload began again
    const back = await call(v1(id));
    expect(back.status).toBe(200);
    expect(sha256(back.body)).toBe(sha256(bytes));
  }, 120_000);

  it('never answers 201 for a content whose S3 server died in the middle of its completion', async () => {
    const total = 2 * P + 3 * MiB;
    const bytes = randomBytes(total);
    const { id, last } = await sendAllButLast(bytes);
    const s3 = backing.servers.s3;
    let killedAt = '';
    // The kill comes once the S3 server has begun the completion: its upload is renamed away.
    proxy.decide = (c) =>
      isCompletion(c) && !killedAt
        ? {
            kind: 'watch',
            meanwhile: async () => {
              const deadline = Date.now() + 10_000;
              while (!killedAt && Date.now() < deadline) {
                const begun = findInProgress(join(dir, 's3'));
                if (begun) {
                  await s3.kill();
                  killedAt = begun;
                  return;
                }
                await new Promise((resolve) => setTimeout(resolve, 1));
              }
            },
          }
        : { kind: 'pass' };
    const first = await send(id, bytes, last, total);
    expect(killedAt).not.toBe('');
    console.log(`S3 killed with ${killedAt} in its data; the last range answered ${first.status}`);
    expect(first.status).toBe(503);
    await s3.start();
    const { answers, last: refused } = await retryUntilAnswered(id, bytes, last);
    console.log(`answers to the last range sent again: ${answers.join(', ')}`);
    expect(answers.filter((a) => a.startsWith('2'))).toEqual([]);
    expect(refused.status).toBe(409);
    expect(errorId(refused)).toBe('urn:error:contents:uploadRestarted');
    await resumeAndCheck(id, bytes);
  }, 180_000);
});

/** The name of a multipart upload directory the S3 server renamed to begin its completion, if any. */
function findInProgress(root: string): string | null {
  const walk = (at: string, depth: number): string | null => {
    let entries;
    try {
      entries = readdirSync(at, { withFileTypes: true });
    } catch {
      return null;
    }
    for (const e of entries) {
      if (e.name.endsWith('.inprogress')) return e.name;
      if (e.isDirectory() && depth < 5) {
        const found = walk(join(at, e.name), depth + 1);
        if (found) return found;
      }
    }
    return null;
  };
  return walk(root, 0);
}
