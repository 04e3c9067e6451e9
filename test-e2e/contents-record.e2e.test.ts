// A finished content is its S3 object alone: GET and HEAD of one, and a one-shot POST, make no
// call to any database. The content-service keeps unfinished uploads in Redis (and has no MongoDB
// client at all); here it gets a Redis of its own whose command counters tell every call it made.
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { createLogger } from '@cp/logging';
import { closeRedis, connectRedis, redisCommand, type Redis } from '@cp/redis';
import { call, sha256 } from './support/http';
import { BackingServer } from './support/privateBacking';
import { testS3Client, testStack, tokenFor } from './support/stack';

// eslint-disable-next-line @typescript-eslint/no-require-imports -- the plain-JS stack launcher
const { startStack, freePort } = require('../tools/devstack/stack') as {
  startStack: (opts: Record<string, unknown>) => Promise<{ gatewayUrl: string; stop: () => Promise<void> }>;
  freePort: () => Promise<number>;
};

/** Commands a connection makes by itself (handshake, health), not on a request's behalf. */
const HOUSEKEEPING = new Set(['info', 'ping', 'hello', 'client', 'select', 'auth', 'command', 'config']);

describe('the record of a finished content', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-record-'));
  let redis: BackingServer;
  let counter: Redis;
  let stack: Awaited<ReturnType<typeof startStack>>;
  let token: string;
  let bucket: string;
  const owner = randomUUID();
  const url = (id?: string) => `${stack.gatewayUrl}/v1/${owner}/contents${id ? `/${id}` : ''}`;

  /** Calls per command since the counters were last read, housekeeping left out. */
  const calls = async (): Promise<Record<string, number>> => {
    const info = await redisCommand<string>(counter, ['INFO', 'commandstats']);
    await redisCommand(counter, ['CONFIG', 'RESETSTAT']);
    const counted: Record<string, number> = {};
    for (const m of info.matchAll(/^cmdstat_([a-z|]+):calls=(\d+)/gm)) {
      if (!HOUSEKEEPING.has(m[1]!.split('|')[0]!)) counted[m[1]!] = Number(m[2]);
    }
    return counted;
  };

  beforeAll(async () => {
    redis = new BackingServer('redis', await freePort(), dir);
    await redis.start();
    const redisUrl = `redis://127.0.0.1:${redis.port}`;
    counter = connectRedis(redisUrl, createLogger({ service: 'test', level: 'silent' }));
    const prefix = `rec${Date.now().toString(36)}`;
    bucket = `${prefix}-contents`;
    stack = await startStack({
      prefix,
      logDir: join(dir, 'logs'),
      keysDir: testStack().keysDir,
      // The webhook dispatcher's background rounds are no request's calls: one at start-up, then hourly here.
      contentEnv: { REDIS_URL: redisUrl, LOG_LEVEL: 'warn', WEBHOOK_POLL_SECONDS: '3600' },
    });
    token = await tokenFor([owner]);
    for (let i = 0; i < 50 && !counter.isReady; i++) await new Promise((r) => setTimeout(r, 100));
  }, 120_000);

  afterAll(async () => {
    await stack?.stop();
    if (counter) await closeRedis(counter);
    await redis?.kill();
    rmSync(dir, { recursive: true, force: true });
  });

  it('POST of a whole content, GET (whole and ranged) and HEAD of it call no database', async () => {
    const stored: { id: string; bytes: Buffer }[] = [];
    await calls();
    for (let i = 0; i < 5; i++) {
      const bytes = randomBytes(10 * 1024);
      const r = await call(url(), { method: 'POST', body: bytes, token, headers: { 'content-type': 'text/plain' } });
      expect(r.status).toBe(201);
      stored.push({ id: r.json().id as string, bytes });
    }
    for (const { id, bytes } of stored) {
      const whole = await call(url(id), { token });
      expect(`${whole.status} ${sha256(whole.body)} ${whole.headers.get('content-type')}`).toBe(
        `200 ${sha256(bytes)} text/plain`,
      );
      const ranged = await call(url(id), { token, headers: { range: 'bytes=100-199' } });
      expect(ranged.status).toBe(206);
      expect(ranged.body.equals(bytes.subarray(100, 200))).toBe(true);
      const head = await call(url(id), { method: 'HEAD', token });
      expect(`${head.status} ${head.headers.get('x-upload-state')} ${head.headers.get('content-length')}`).toBe(
        `200 ready ${bytes.length}`,
      );
    }
    expect(await calls()).toEqual({});
  });

  it('counts the calls of an unfinished upload (the counters see this service), and of its miss path', async () => {
    await calls();
    const r = await call(url(), {
      method: 'POST',
      body: randomBytes(10),
      token,
      headers: { 'content-range': 'bytes 0-9/20' },
    });
    expect(r.status).toBe(201);
    const upload = await calls();
    expect(Object.values(upload).reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
    const pending = await call(url(r.json().id as string), { token });
    expect(pending.status).toBe(409);
    const unknown = await call(url(randomUUID()), { token });
    expect(unknown.status).toBe(404);
    expect(Object.keys(await calls()).length).toBeGreaterThan(0);
  });

  it('serves a content stored before objects carried metadata, from S3 alone', async () => {
    const s3 = testS3Client();
    const id = randomUUID();
    const bytes = randomBytes(3000);
    // As earlier versions stored a one-shot content: the object with its Content-Type, nothing else.
    await s3.send(
      new PutObjectCommand({
        Bucket: bucket,
        Key: `contents/${owner}/${id}`,
        Body: bytes,
        ContentType: 'application/pdf',
      }),
    );
    s3.destroy();
    await calls();
    const whole = await call(url(id), { token });
    expect(`${whole.status} ${sha256(whole.body)} ${whole.headers.get('content-type')}`).toBe(
      `200 ${sha256(bytes)} application/pdf`,
    );
    const head = await call(url(id), { method: 'HEAD', token });
    expect(`${head.status} ${head.headers.get('x-content-total')}`).toBe('200 3000');
    expect(await calls()).toEqual({});
  });
});
