// The content-service's Redis user (deploy/compose.yaml, k8s) keeps the unfinished uploads (up:*)
// and may only read the sid cache: its cache reader works with that, any write to the cache is
// refused by Redis itself, and so is any other service's key. Its webhooks and their outbox (wh:*)
// are exercised as this user in webhookOutbox.int.test.ts.
import { randomBytes, randomUUID } from 'node:crypto';
import type { Principal } from '../src/http/Principal';
import { createLogger } from '@cp/logging';
import { RequestRateLimiter } from '@cp/rate-limit';
import { redisCommand, RedisUnavailable } from '@cp/redis';
import { Registry } from 'prom-client';
import { SessionCache, tokenHash } from '@cp/session-cache';
import { connectAsServiceUser } from '../../../test-e2e/support/redisAcl';
import { testStack } from '../../../test-e2e/support/stack';
import { CachedSessionValidator } from '../src/http/CachedSessionValidator';
import { RedisLease } from '../src/store/RedisLease';
import { RedisUploadBook } from '../src/store/RedisUploadBook';

describe("the content-service's read-only Redis user", () => {
  let user: Awaited<ReturnType<typeof connectAsServiceUser>>;
  let session: Awaited<ReturnType<typeof connectAsServiceUser>>;
  const asked: string[] = [];
  const fallback: Principal = { kind: 'session', subject: 'asked', owners: [] };

  beforeAll(async () => {
    user = await connectAsServiceUser(testStack().backing.REDIS_URL, 'content-service');
    session = await connectAsServiceUser(testStack().backing.REDIS_URL, 'session-service');
  });
  afterAll(async () => {
    await user?.close();
    await session?.close();
  });

  const newSid = () => randomBytes(32).toString('hex').toUpperCase();
  const limiterOptions = () => ({
    prefix: 'rl:v1',
    perKey: { points: 2, seconds: 60 },
    perAddress: null,
    trustedProxyHops: 0,
    logger: createLogger({ service: 'test', level: 'silent' }),
  });

  it('answers auth.sid from the cache the session-service filled', async () => {
    const sid = newSid();
    const dead = newSid();
    const writer = new SessionCache(session.client, 60);
    await writer.fillLive(
      tokenHash(sid)!,
      { userId: 'u-acl', owners: ['AB'], familyId: 'f', sidExpiresAt: Date.now() + 60_000 },
      Date.now(),
    );
    await writer.tombstone(tokenHash(dead)!);
    const validator = new CachedSessionValidator(new SessionCache(user.client), {
      validate: async (s) => (asked.push(s), fallback),
    });
    expect(await validator.validate(sid)).toEqual({ kind: 'session', subject: 'u-acl', owners: ['ab'] });
    expect(await validator.validate(dead)).toBeNull();
    const missing = newSid();
    expect(await validator.validate(missing)).toBe(fallback); // a miss goes to the session-service
    expect(asked).toEqual([missing]);
  });

  it('counts requests per owner in Redis (rl:v1:*): the limit holds across limiters, without falling back to memory', async () => {
    const registry = new Registry();
    const owner = randomUUID();
    const a = new RequestRateLimiter(user.client, { ...limiterOptions(), registry });
    const b = new RequestRateLimiter(user.client, { ...limiterOptions(), registry: new Registry() });
    expect(await a.check(owner, '')).toBe(0);
    expect(await b.check(owner, '')).toBe(0);
    expect(await a.check(owner, '')).toBeGreaterThan(0); // the third, counted by another limiter: over
    expect(await a.check(randomUUID(), '')).toBe(0); // another owner's allowance is its own
    const failures = (await registry.getSingleMetricAsString('rate_limit_redis_failures_total'))
      .trim()
      .split('\n')
      .pop();
    expect(failures).toMatch(/ 0$/);
  });

  it('keeps an upload in its book: create, commit by compare-and-set, lease, remove', async () => {
    const book = new RedisUploadBook(user.client, `acl-${randomBytes(4).toString('hex')}`);
    const id = randomUUID();
    const owner = randomUUID();
    const now = new Date();
    await book.create({
      _id: id,
      ownerId: owner,
      total: 10,
      contentType: 'text/plain',
      s3Key: 'k',
      uploadId: 'u',
      uploader: null,
      createdAt: now,
      expiresAt: now,
    });
    const state = await book.state(id);
    expect(
      await book.commit({ ...state, lastByte: 9 }, [
        { contentId: id, k: 1, pieces: [], stored: false, assembling: null },
      ]),
    ).toBe(true);
    await book.extend(id, new Date(now.getTime() + 1000));
    expect(await book.expired(new Date(now.getTime() + 2000), 10)).toEqual([id]);
    expect(await book.ownedCount(owner)).toBe(1);
    await book.noteCleanup(id, now);
    expect(await book.pendingCleanups(10)).toEqual([id]);
    await book.cleanupDone(id);
    const lease = new RedisLease(user.client, 'acl');
    const token = (await lease.acquire('sweeper', 1000))!;
    expect(await lease.renew('sweeper', token, 1000)).toBe(true);
    await lease.release('sweeper', token);
    await book.remove(id);
    expect(await book.find(id)).toBeNull();
  });

  it('cannot write the cache, nor read or write other keys', async () => {
    const reader = new SessionCache(user.client);
    const hash = tokenHash(newSid())!;
    await expect(reader.tombstone(hash)).rejects.toThrow(/NOPERM/);
    await expect(reader.fillDead(hash)).rejects.toBeInstanceOf(RedisUnavailable);
    await expect(redisCommand(user.client, ['DEL', `sess:${hash}`])).rejects.toThrow(/NOPERM/);
    await expect(redisCommand(user.client, ['GET', 'auth:rnd:someone'])).rejects.toThrow(/NOPERM/);
    await expect(
      redisCommand(user.client, ['EVAL', "return redis.call('SET', KEYS[1], 'x')", '1', `sess:${hash}`]),
    ).rejects.toThrow(/NOPERM/);
    await expect(
      redisCommand(user.client, ['EVAL', "return redis.call('GET', KEYS[1])", '1', 'auth:rnd:someone']),
    ).rejects.toThrow(/NOPERM/);
    expect(await redisCommand(session.client, ['GET', `sess:${hash}`])).toBeNull(); // nothing was written
  });
});
