// Per-owner quotas (QUOTAS=true): bytes stored and unfinished uploads at once, checked before any
// byte of a new content is stored (403 with its own code, nothing stored), and `pnpm admin quota`,
// whose usage is recounted from S3. A content-service of its own with quotas on, behind a gateway
// of its own in front of the test stack's auth- and session-services.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ListMultipartUploadsCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { closeRedis, connectRedis, redisCommand, type Redis } from '@cp/redis';
import { createLogger } from '@cp/logging';
import { newOwner, rangeOf } from './support/http';
import { contentReplicaEnv, type ServiceHandle, startGatewayFor, startService } from './support/replicas';
import { testS3Client, testStack, tokenFor } from './support/stack';

const run = promisify(execFile);
const ROOT = join(__dirname, '..');
const LIMIT = 1_048_576;

describe('per-owner quotas', () => {
  const started: ServiceHandle[] = [];
  let gateway: string;
  let env: Record<string, string>;
  let redis: Redis;

  beforeAll(async () => {
    const stack = testStack();
    const logDir = join(stack.logDir, 'quotas');
    env = contentReplicaEnv({
      LOG_LEVEL: 'warn',
      QUOTAS: 'true',
      QUOTA_STORAGE_BYTES: String(LIMIT),
      QUOTA_UNFINISHED_UPLOADS: '2',
    });
    const content = await startService('content-service', { logDir, env });
    started.push(content);
    const front = await startGatewayFor(content.url, logDir, started);
    gateway = front.url;
    redis = connectRedis(stack.backing.REDIS_URL, createLogger({ service: 'test', level: 'silent' }));
  });
  afterAll(async () => {
    await Promise.all(started.map((s) => s.stop()));
    if (redis) await closeRedis(redis);
  });

  const url = (owner: string, id = '') => `${gateway}/v1/${owner}/contents${id ? `/${id}` : ''}`;
  async function send(path: string, token: string, init: RequestInit = {}) {
    const res = await fetch(path, { ...init, headers: { authorization: `Bearer ${token}`, ...init.headers } });
    const text = await res.text();
    return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
  }
  const post = (owner: string, token: string, bytes: number) =>
    send(url(owner), token, { method: 'POST', body: randomBytes(bytes) });
  const postRange = (owner: string, token: string, first: number, total: number) =>
    send(url(owner), token, {
      method: 'POST',
      body: randomBytes(first),
      headers: { 'content-range': rangeOf(0, first, total) },
    });
  /** The owner's objects in S3: how many, and their bytes. */
  async function inS3(owner: string): Promise<{ count: number; bytes: number }> {
    const out = await testS3Client().send(
      new ListObjectsV2Command({ Bucket: env.S3_BUCKET, Prefix: `contents/${owner}/` }),
    );
    const sizes = (out.Contents ?? []).map((o) => o.Size ?? 0);
    return { count: sizes.length, bytes: sizes.reduce((a, b) => a + b, 0) };
  }
  async function listed(owner: string, token: string): Promise<string[]> {
    const page = await send(`${url(owner)}?limit=1000`, token);
    return (page.body.items as { id: string }[]).map((i) => i.id).sort();
  }
  async function quota(...args: string[]): Promise<string> {
    const { stdout } = await run('pnpm', ['--silent', 'admin', 'quota', ...args], {
      cwd: ROOT,
      env: { ...process.env, ...env, AUDIT_LOG: testStack().auditFile },
    });
    return stdout;
  }

  it('refuses a content that does not fit in the bytes quota, before storing any of it, and frees bytes on delete', async () => {
    const owner = newOwner();
    const token = await tokenFor([owner]);
    const first = await post(owner, token, 600_000);
    expect(first.status).toBe(201);
    const over = await post(owner, token, 500_000);
    expect(over.status).toBe(403);
    expect(over.body.id).toBe('urn:error:contents:storageQuotaExceeded');
    expect(over.body.message).toContain(String(LIMIT));
    expect(over.body.message).toContain('600000');
    expect(await inS3(owner)).toEqual({ count: 1, bytes: 600_000 });
    // A multipart upload holds its declared total from its first request on.
    const held = await postRange(owner, token, 100, 400_000);
    expect(held.status).toBe(201);
    const overHeld = await postRange(owner, token, 100, 100_000);
    expect(overHeld.status).toBe(403);
    expect(overHeld.body.id).toBe('urn:error:contents:storageQuotaExceeded');
    // A chunked one-shot (length known only at its end) longer than what is left: refused, nothing stored.
    const chunked = await send(url(owner), token, {
      method: 'POST',
      body: new Blob([randomBytes(100_000)]).stream(),
      duplex: 'half',
    } as RequestInit);
    expect(chunked.status).toBe(403);
    expect(chunked.body.id).toBe('urn:error:contents:storageQuotaExceeded');
    expect(await listed(owner, token)).toEqual([first.body.id, held.body.id].sort());
    expect(await inS3(owner)).toEqual({ count: 1, bytes: 600_000 });
    // Deleting the ready content frees its bytes; deleting the upload frees what it held.
    expect((await send(url(owner, first.body.id as string), token, { method: 'DELETE' })).status).toBe(204);
    expect((await post(owner, token, 600_000)).status).toBe(201);
    expect((await send(url(owner, held.body.id as string), token, { method: 'DELETE' })).status).toBe(204);
    expect((await post(owner, token, 400_000)).status).toBe(201);
    expect((await post(owner, token, 50_000)).status).toBe(403);
  });

  it('counts a content deleted by racing DELETEs once, ready or unfinished', async () => {
    const owner = newOwner();
    const token = await tokenFor([owner]);
    const removeFourTimes = async (id: string) =>
      (await Promise.all([1, 2, 3, 4].map(() => send(url(owner, id), token, { method: 'DELETE' })))).map(
        (r) => r.status,
      );
    const kept = await post(owner, token, 500_000);
    const gone = await post(owner, token, 500_000);
    expect([kept.status, gone.status]).toEqual([201, 201]);
    expect(await removeFourTimes(gone.body.id as string)).toContain(204);
    // 500,000 are still stored: 600,000 more do not fit (before: each DELETE freed 500,000, and they did).
    expect((await post(owner, token, 600_000)).status).toBe(403);
    expect((await post(owner, token, 500_000)).status).toBe(201);

    const other = newOwner();
    const otherToken = await tokenFor([other]);
    const a = await postRange(other, otherToken, 100, 500_000);
    const b = await postRange(other, otherToken, 100, 500_000);
    expect([a.status, b.status]).toEqual([201, 201]);
    const statuses = await Promise.all(
      [1, 2, 3, 4].map(
        async () => (await send(url(other, b.body.id as string), otherToken, { method: 'DELETE' })).status,
      ),
    );
    expect(statuses).toContain(204);
    expect((await postRange(other, otherToken, 100, 600_000)).status).toBe(403);
    expect((await postRange(other, otherToken, 100, 500_000)).status).toBe(201);
  });

  it('holds the total of an upload begun without one when a write names it, refusing that write if it does not fit', async () => {
    const owner = newOwner();
    const token = await tokenFor([owner]);
    expect((await post(owner, token, 600_000)).status).toBe(201);
    const begun = await send(url(owner), token, {
      method: 'POST',
      body: randomBytes(10),
      headers: { 'content-range': 'bytes 0-9/*' },
    });
    expect(begun.status).toBe(201);
    const id = begun.body.id as string;
    const put = (total: number) =>
      send(url(owner, id), token, {
        method: 'PUT',
        body: randomBytes(10),
        headers: { 'content-range': rangeOf(10, 20, total) },
      });
    const refused = await put(500_000);
    expect(refused.status).toBe(403);
    expect(refused.body.id).toBe('urn:error:contents:storageQuotaExceeded');
    // The refusal named nothing: another total is still free to be named, and it is held from then on.
    expect((await put(400_000)).status).toBeLessThan(300);
    expect((await put(400_000)).status).toBeLessThan(300); // naming it again holds nothing more
    // A recount from S3 and the bookkeeping finds the named total held too (before: it let it go).
    await quota('show', '--owner', owner);
    expect((await post(owner, token, 100_000)).status).toBe(403);
    expect((await post(owner, token, 40_000)).status).toBe(201);
    expect((await send(url(owner, id), token, { method: 'DELETE' })).status).toBe(204);
    expect((await post(owner, token, 400_000)).status).toBe(201);
  });

  it('refuses an unfinished upload past the quota of uploads at once, and takes one again once one completes', async () => {
    const owner = newOwner();
    const token = await tokenFor([owner]);
    const a = await postRange(owner, token, 10, 20);
    const b = await postRange(owner, token, 10, 20);
    expect([a.status, b.status]).toEqual([201, 201]);
    const third = await postRange(owner, token, 10, 20);
    expect(third.status).toBe(403);
    expect(third.body.id).toBe('urn:error:contents:uploadQuotaExceeded');
    expect(third.body.message).toContain('2');
    expect(await listed(owner, token)).toEqual([a.body.id, b.body.id].sort());
    // A one-shot content is not an unfinished upload.
    expect((await post(owner, token, 10)).status).toBe(201);
    const rest = await send(url(owner, a.body.id as string), token, {
      method: 'PUT',
      body: randomBytes(10),
      headers: { 'content-range': rangeOf(10, 20, 20) },
    });
    expect(rest.status).toBe(201);
    expect((await postRange(owner, token, 10, 20)).status).toBe(201);
  });

  it('lets exactly as many racing uploads begin as the quota of uploads allows, and leaves nothing of the others', async () => {
    const owner = newOwner();
    const token = await tokenFor([owner]);
    const answers = await Promise.all(Array.from({ length: 8 }, () => postRange(owner, token, 10, 20)));
    const begun = answers.filter((a) => a.status === 201);
    expect(begun).toHaveLength(2);
    for (const a of answers.filter((x) => x.status !== 201))
      expect([a.status, a.body.id]).toEqual([403, 'urn:error:contents:uploadQuotaExceeded']);
    expect(await listed(owner, token)).toEqual(begun.map((a) => a.body.id as string).sort());
    // The refused ones' multipart uploads in S3 were aborted: only the two begun are open.
    const open = await testS3Client().send(
      new ListMultipartUploadsCommand({ Bucket: env.S3_BUCKET, Prefix: `contents/${owner}/` }),
    );
    expect((open.Uploads ?? []).map((u) => u.Key).sort()).toEqual(
      begun.map((a) => `contents/${owner}/${a.body.id as string}`).sort(),
    );
  });

  it('recounts an owner from S3 after a refusal, so counters a crash left off stop refusing it', async () => {
    const owner = newOwner();
    const token = await tokenFor([owner]);
    expect((await post(owner, token, 1_000)).status).toBe(201);
    // What a process killed between its hold and S3's answer leaves: bytes held for a content that never came.
    const key = `up:${env.S3_BUCKET}:~quota:${owner}`;
    await redisCommand(redis, ['HSET', key, 'reserved', String(LIMIT)]);
    const refused = await post(owner, token, 1_000);
    expect(refused.status).toBe(403);
    expect(refused.body.id).toBe('urn:error:contents:storageQuotaExceeded');
    const started = performance.now();
    let status = 0;
    while (status !== 201 && performance.now() - started < 10_000) {
      await new Promise((r) => setTimeout(r, 100));
      status = (await post(owner, token, 1_000)).status;
    }
    console.log(`a refusal from counters left off lifted ${Math.round(performance.now() - started)} ms after it`);
    expect(status).toBe(201);
    expect(await redisCommand(redis, ['HMGET', key, 'used', 'reserved'])).toEqual(['2000', '0']);
    // One recount per owner per interval among all replicas: the next refusal waits for it.
    expect(Number(await redisCommand(redis, ['TTL', `up:${env.S3_BUCKET}:~quota-recount:${owner}`]))).toBeGreaterThan(
      500,
    );
  });

  it('pnpm admin quota sets an owner’s limits and shows its usage recounted from S3, correcting counters left off', async () => {
    const owner = newOwner();
    const token = await tokenFor([owner]);
    expect(await quota('set', '--owner', owner, '--bytes', '2K')).toContain('limits: bytes 2048');
    expect((await post(owner, token, 1_500)).status).toBe(201);
    const over = await post(owner, token, 1_000);
    expect(over.status).toBe(403);
    expect(over.body.message).toContain('2048');
    await quota('set', '--owner', owner, '--bytes', 'unlimited', '--uploads', '5');
    expect((await post(owner, token, 1_000)).status).toBe(201);
    const upload = await postRange(owner, token, 10, 700);
    expect(upload.status).toBe(201);
    const shown = await quota('show', '--owner', owner);
    expect(shown).toContain('limits: bytes unlimited, unfinished uploads 5');
    expect(shown).toContain('stored: 2500 bytes in 2 ready contents (S3)');
    expect(shown).toContain('held: 700 bytes for 1 unfinished upload');
    expect(await inS3(owner)).toEqual({ count: 2, bytes: 2_500 });
    // What a process killed between S3's answer and its count leaves: counters that are off.
    await redisCommand(redis, ['HSET', `up:${env.S3_BUCKET}:~quota:${owner}`, 'used', '0', 'reserved', '99999']);
    const corrected = await quota('show', '--owner', owner);
    expect(corrected).toContain('counters: used 0 → 2500, held 99999 → 700');
    expect(corrected).toContain('stored: 2500 bytes');
    await quota('set', '--owner', owner, '--bytes', 'default');
    expect((await quota('show', '--owner', owner)).split('\n')[1]).toBe('limits: bytes default, unfinished uploads 5');
    // Bad input changes nothing and says why.
    await expect(quota('set', '--owner', owner, '--bytes', 'lots')).rejects.toMatchObject({
      code: 2,
      stderr: expect.stringContaining('--bytes must be a whole number'),
    });
    await expect(quota('set', '--owner', 'not-a-uuid', '--bytes', '1')).rejects.toMatchObject({ code: 2 });
    // Every change of limits, made or refused, is in the audit trail; a show is not a change.
    const audited = readFileSync(testStack().auditFile, 'utf8')
      .split('\n')
      .filter((line) => line.includes(owner))
      .map(
        (line) => JSON.parse(line) as { event: string; service: string; outcome: string; detail: { bytes: string } },
      );
    expect(audited.map((e) => [e.service, e.event, e.outcome, e.detail.bytes])).toEqual([
      ['content-admin', 'admin.quota.set', 'ok', '2K'],
      ['content-admin', 'admin.quota.set', 'ok', 'unlimited'],
      ['content-admin', 'admin.quota.set', 'ok', 'default'],
      ['content-admin', 'admin.quota.set', 'refused', 'lots'],
    ]);
  });
});
