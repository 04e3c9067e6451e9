// Direct transfer through the gateway (on in the test stack, off in a content-service of its own):
// parts sent straight to S3 with presigned URLs count as parts sent through the service, and
// downloads that prefer it are redirected to S3; the CLI's --direct, with its fallback.
import { execFile } from 'node:child_process';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { call, P, postPart, putPart, rangeOf, sha256, type Answer } from './support/http';
import { cli } from './support/contentCli';
import { closedPort } from './support/proxies';
import { contentReplicaEnv, type ServiceHandle, startGatewayFor, startService } from './support/replicas';
import { testStack, tokenFor } from './support/stack';

const MiB = 1024 * 1024;
const run = promisify(execFile);
const b64sha256 = (b: Buffer) => createHash('sha256').update(b).digest('base64');

interface Target {
  part: number;
  method: string;
  url: string;
  headers: Record<string, string>;
  'expires-at': string;
}

describe('direct transfer', () => {
  const owner = randomUUID();
  const dir = mkdtempSync(join(tmpdir(), 'cp-direct-'));
  let token: string;
  const started: ServiceHandle[] = [];
  let offGateway: string;
  let unreachableGateway: string;
  // The CLI's uploads go through a content-service of this file's own: its count of parts stored by
  // presigned URL is then this file's alone (the shared stack's also counts other files' parts).
  let cliContent: ServiceHandle;
  let cliGateway: string;

  beforeAll(async () => {
    token = await tokenFor([owner]);
    const stack = testStack();
    const logDir = join(stack.logDir, 'direct-off');
    const content = await startService('content-service', {
      env: contentReplicaEnv({ DIRECT_TRANSFER: 'off', LOG_LEVEL: 'warn' }),
      logDir,
    });
    started.push(content);
    const gateway = await startGatewayFor(content.url, logDir, started);
    offGateway = gateway.url;
    // URLs naming an S3 address nobody answers on: as for a client that cannot reach S3.
    const unreachable = await startService('content-service', {
      env: contentReplicaEnv({
        DIRECT_TRANSFER: 'on',
        DIRECT_S3_ENDPOINT: `http://127.0.0.1:${await closedPort()}`,
        LOG_LEVEL: 'warn',
      }),
      logDir,
    });
    started.push(unreachable);
    const front = await startGatewayFor(unreachable.url, logDir, started);
    unreachableGateway = front.url;
    cliContent = await startService('content-service', {
      env: contentReplicaEnv({ DIRECT_TRANSFER: 'on', LOG_LEVEL: 'warn' }),
      logDir,
    });
    started.push(cliContent);
    cliGateway = (await startGatewayFor(cliContent.url, logDir, started)).url;
  });

  afterAll(async () => {
    await Promise.all(started.map((s) => s.stop('SIGTERM')));
    rmSync(dir, { recursive: true, force: true });
  });

  const gw = () => testStack().gatewayUrl;
  const contentUrl = (id: string, base = gw()) => `${base}/v1/${owner}/contents/${id}`;
  const askParts = (id: string, parts: { part: number; sha256?: string }[], base = gw(), as = token) =>
    call(`${contentUrl(id, base)}/direct-parts`, {
      method: 'POST',
      body: JSON.stringify({ parts }),
      headers: { 'content-type': 'application/json' },
      token: as,
    });
  const confirm = (id: string, k: number, etag: string) =>
    call(`${contentUrl(id)}/direct-parts/${k}`, {
      method: 'POST',
      body: JSON.stringify({ etag }),
      headers: { 'content-type': 'application/json' },
      token,
    });
  /** Part k of `data` straight to S3 with a URL asked for it (with its SHA-256), then recorded. */
  async function sendDirect(id: string, data: Buffer, k: number): Promise<Answer> {
    const bytes = data.subarray((k - 1) * P, Math.min(k * P, data.length));
    const asked = await askParts(id, [{ part: k, sha256: b64sha256(bytes) }]);
    expect(asked.status).toBe(200);
    expect(asked.headers.get('cache-control')).toBe('no-store');
    const [target] = (asked.json() as { parts: Target[] }).parts;
    expect(target).toMatchObject({ part: k, method: 'PUT' });
    expect(target!.headers).toEqual({
      'content-length': String(bytes.length),
      'x-amz-checksum-sha256': b64sha256(bytes),
    });
    expect(Date.parse(target!['expires-at'])).toBeGreaterThan(Date.now());
    const put = await fetch(target!.url, { method: 'PUT', body: bytes, headers: target!.headers });
    expect(put.status).toBe(200);
    return confirm(id, k, put.headers.get('etag')!);
  }
  const redirected = (id: string, range?: string, base = gw()) =>
    call(contentUrl(id, base), {
      headers: { prefer: 'redirect', ...(range ? { range } : {}) },
      token,
      redirect: 'manual',
    });

  it('takes some parts straight to S3 and others through the service, shows them in HEAD, and completes once', async () => {
    const total = 2 * P + 10;
    const data = randomBytes(total);
    const created = await postPart(owner, token, data.subarray(2 * P), rangeOf(2 * P, total, total));
    expect(created.status).toBe(201);
    const { id } = created.json() as { id: string };

    const first = await sendDirect(id, data, 1);
    expect(first.status).toBe(200);
    expect(first.json()).toEqual({ id, content: { id }, 'is-completed': false });
    const head = await call(contentUrl(id), { method: 'HEAD', token });
    expect(head.headers.get('x-upload-state')).toBe('uploading');
    expect(head.headers.get('x-received-ranges')).toBe(`0-${P - 1},${2 * P}-${total - 1}`);

    const last = await putPart(owner, id, token, data.subarray(P, 2 * P), rangeOf(P, 2 * P, total));
    expect(last.status).toBe(201);
    const back = await call(contentUrl(id), { token });
    expect(back.status).toBe(200);
    expect(sha256(back.body)).toBe(sha256(data));
  });

  it('completes with the direct part that is the last one: 201 once, and the content takes no more', async () => {
    const total = P + 5 * MiB;
    const data = randomBytes(total);
    const created = await postPart(owner, token, data.subarray(0, P), rangeOf(0, P, total));
    const { id } = created.json() as { id: string };
    const answers = await Promise.all([sendDirect(id, data, 2)]);
    expect(answers[0]!.status).toBe(201);
    expect(answers[0]!.json()).toEqual({ id, content: { id }, 'is-completed': true });
    // Audited as a completing PUT is: one content.complete, by the request that recorded the part.
    const deadline = Date.now() + 5_000;
    let completions: unknown[] = [];
    while (completions.length === 0 && Date.now() < deadline) {
      completions = readFileSync(testStack().auditFile, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as { event: string; content?: string })
        .filter((e) => e.event === 'content.complete' && e.content === id);
      if (completions.length === 0) await new Promise((r) => setTimeout(r, 50));
    }
    expect(completions).toHaveLength(1);
    const again = await askParts(id, [{ part: 2 }]);
    expect(again.status).toBe(409);
    expect((again.json() as { id: string }).id).toBe('urn:error:contents:contentAlreadyComplete');
    const back = await call(contentUrl(id), { token });
    expect(sha256(back.body)).toBe(sha256(data));
  });

  it('redirects a download that prefers it to S3, whole and ranged, byte for byte', async () => {
    const total = P + 3 * MiB + 1;
    const data = randomBytes(total);
    const created = await postPart(owner, token, data.subarray(P), rangeOf(P, total, total));
    const { id } = created.json() as { id: string };
    const unfinished = await redirected(id);
    expect(unfinished.status).toBe(409);
    expect(unfinished.headers.get('location')).toBeNull();
    expect((await putPart(owner, id, token, data.subarray(0, P), rangeOf(0, P, total))).status).toBe(201);

    const whole = await redirected(id);
    expect(whole.status).toBe(307);
    expect(whole.headers.get('preference-applied')).toBe('redirect');
    expect(whole.headers.get('cache-control')).toBe('no-store');
    const location = whole.headers.get('location')!;
    expect(new URL(location).origin).toBe(new URL(testStack().backing.S3_ENDPOINT).origin);
    const fromS3 = Buffer.from(await (await fetch(location)).arrayBuffer());
    expect(sha256(fromS3)).toBe(sha256(data));

    const range = `bytes=${P - 5}-${P + 4}`;
    const ranged = await redirected(id, range);
    expect(ranged.status).toBe(307);
    const part = await fetch(ranged.headers.get('location')!, { headers: { range } });
    expect(part.status).toBe(206);
    expect(Buffer.from(await part.arrayBuffer())).toEqual(data.subarray(P - 5, P + 5));
    // A range in another spelling (upper case: RFC 9110 allows it, S3 ignores it) is served by the service.
    const shouted = await redirected(id, range.toUpperCase());
    expect(shouted.status).toBe(206);
    expect(Buffer.from(shouted.body)).toEqual(data.subarray(P - 5, P + 5));
    // The URL is signed for that Range: another one is refused by S3.
    const other = await fetch(ranged.headers.get('location')!, { headers: { range: 'bytes=0-9' } });
    expect(other.status).toBe(403);
    // As the docs show it: curl -L follows the 307 with the same Range.
    const out = join(dir, 'curl-range.bin');
    await run('curl', [
      '-s',
      '-f',
      '-L',
      contentUrl(id),
      '-H',
      `Authorization: Bearer ${token}`,
      '-H',
      'Prefer: redirect',
      '-H',
      `Range: ${range}`,
      '-o',
      out,
    ]);
    expect(readFileSync(out)).toEqual(data.subarray(P - 5, P + 5));
    // Without Prefer: served as before.
    const plain = await call(contentUrl(id), { headers: { range }, token });
    expect(plain.status).toBe(206);
    expect(plain.headers.get('preference-applied')).toBeNull();
  });

  it("answers another owner's content 404 with no URL", async () => {
    const data = randomBytes(10);
    const created = await postPart(owner, token, data.subarray(5), rangeOf(5, 10, 10));
    const { id } = created.json() as { id: string };
    const stranger = randomUUID();
    const theirs = await tokenFor([stranger]);
    const url = `${gw()}/v1/${stranger}/contents/${id}`;
    const asked = await call(`${url}/direct-parts`, {
      method: 'POST',
      body: JSON.stringify({ parts: [{ part: 1 }] }),
      token: theirs,
    });
    expect(asked.status).toBe(404);
    expect(asked.body.toString()).not.toMatch(/X-Amz/i);
    const got = await call(url, { headers: { prefer: 'redirect' }, token: theirs, redirect: 'manual' });
    expect(got.status).toBe(404);
    expect(got.headers.get('location')).toBeNull();
  });

  it('where it is off: the direct-parts call answers 501 directTransferDisabled, and Prefer: redirect is ignored', async () => {
    const data = randomBytes(P + 10);
    const created = await call(`${offGateway}/v1/${owner}/contents`, {
      method: 'POST',
      body: data.subarray(P),
      headers: { 'content-range': rangeOf(P, P + 10, P + 10) },
      token,
    });
    expect(created.status).toBe(201);
    const { id } = created.json() as { id: string };
    const asked = await askParts(id, [{ part: 1 }], offGateway);
    expect(asked.status).toBe(501);
    expect(asked.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(asked.json()).toMatchObject({
      id: 'urn:error:contents:directTransferDisabled',
      'status-code': 501,
      'track-id': expect.any(String),
    });
    const done = await call(`${offGateway}/v1/${owner}/contents/${id}`, {
      method: 'PUT',
      body: data.subarray(0, P),
      headers: { 'content-range': rangeOf(0, P, P + 10) },
      token,
    });
    expect(done.status).toBe(201);
    const got = await redirected(id, 'bytes=0-9', offGateway);
    expect(got.status).toBe(206);
    expect(got.headers.get('preference-applied')).toBeNull();
    expect(got.body).toEqual(data.subarray(0, 10));
  });

  describe('the CLI with --direct', () => {
    const base = (url = cliGateway) => ['--owner', owner, '--url', url, '--json'];
    const env = () => ({ CONTENT_TOKEN: token });
    const metric = async () => {
      const text = await (await fetch(`${cliContent.adminUrl}/metrics`)).text();
      return Number(/content_parts_stored_total\{[^}]*via="presigned"[^}]*\} (\d+)/.exec(text)?.[1] ?? 0);
    };

    it('uploads and downloads byte for byte, the 64 MiB parts but the first through S3', async () => {
      const data = randomBytes(2 * P + 3 * MiB + 1);
      const file = join(dir, 'up.bin');
      writeFileSync(file, data);
      const before = await metric();
      const up = await cli(['upload', file, '--direct', ...base()], { env: env() });
      expect(up.stderr).toBe('');
      expect(up.code).toBe(0);
      expect(await metric()).toBe(before + 2);
      const { id } = JSON.parse(up.stdout) as { id: string };
      const out = join(dir, 'down.bin');
      const down = await cli(['download', id, out, '--direct', '--sha256', sha256(data), ...base()], { env: env() });
      expect(down.code).toBe(0);
      expect(sha256(readFileSync(out))).toBe(sha256(data));
    });

    it('resumes a direct upload: only the missing parts are sent', async () => {
      const total = 3 * P + 7;
      const data = randomBytes(total);
      const file = join(dir, 'resume.bin');
      writeFileSync(file, data);
      const created = await postPart(owner, token, data.subarray(0, P), rangeOf(0, P, total));
      const { id } = created.json() as { id: string };
      expect((await sendDirect(id, data, 3)).status).toBe(200);
      const head = await call(contentUrl(id), { method: 'HEAD', token });
      expect(head.headers.get('x-received-ranges')).toBe(`0-${P - 1},${2 * P}-${3 * P - 1}`);
      const before = await metric();
      const up = await cli(['upload', file, '--resume', id, '--direct', ...base()], { env: env() });
      expect(up.code).toBe(0);
      expect(await metric()).toBe(before + 2); // parts 2 and 4 only, straight to S3
      const back = await call(contentUrl(id), { token });
      expect(sha256(back.body)).toBe(sha256(data));
    });

    it('falls back to the service when S3 cannot be reached at the address the URLs name', async () => {
      const data = randomBytes(2 * P + 5);
      const file = join(dir, 'unreachable.bin');
      writeFileSync(file, data);
      const up = await cli(['upload', file, '--direct', ...base(unreachableGateway)], { env: env() });
      expect(up.stderr).toBe('');
      expect(up.code).toBe(0);
      const { id } = JSON.parse(up.stdout) as { id: string };
      const out = join(dir, 'unreachable-back.bin');
      const down = await cli(['download', id, out, '--direct', ...base(unreachableGateway)], { env: env() });
      expect(down.code).toBe(0);
      expect(sha256(readFileSync(out))).toBe(sha256(data));
    });

    it('falls back to the service where direct transfer is off', async () => {
      const data = randomBytes(P + MiB);
      const file = join(dir, 'off.bin');
      writeFileSync(file, data);
      const up = await cli(['upload', file, '--direct', ...base(offGateway)], { env: env() });
      expect(up.code).toBe(0);
      const { id } = JSON.parse(up.stdout) as { id: string };
      const out = join(dir, 'off-back.bin');
      const down = await cli(['download', id, out, '--direct', ...base(offGateway)], { env: env() });
      expect(down.code).toBe(0);
      expect(sha256(readFileSync(out))).toBe(sha256(data));
    });
  });
});
