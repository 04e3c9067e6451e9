// The session-service's Redis user (deploy/compose.yaml, k8s): its sid cache and its rate limits
// work with exactly the keys and commands that user is granted.
import { randomBytes } from 'node:crypto';
import { createLogger } from '@cp/logging';
import { RequestRateLimiter } from '@cp/rate-limit';
import { redisCommand } from '@cp/redis';
import { SessionCache, tokenHash } from '@cp/session-cache';
import { connectAsServiceUser } from '../../../test-e2e/support/redisAcl';
import { testStack } from '../../../test-e2e/support/stack';

describe("the session-service's Redis user", () => {
  let user: Awaited<ReturnType<typeof connectAsServiceUser>>;
  const logger = createLogger({ service: 'acl-test', level: 'silent' });
  beforeAll(async () => {
    user = await connectAsServiceUser(testStack().backing.REDIS_URL, 'session-service');
  });
  afterAll(async () => {
    await user?.close();
  });

  it('fills, bypasses and tombstones the sid cache', async () => {
    const cache = new SessionCache(user.client, 60);
    const hash = tokenHash(randomBytes(32).toString('hex'))!;
    const now = Date.now();
    await cache.fillLive(hash, { userId: 'u', owners: ['o'], familyId: 'f', sidExpiresAt: now + 60_000 }, now);
    expect((await cache.get(hash)).kind).toBe('live');
    await cache.bypass(hash);
    expect((await cache.get(hash)).kind).toBe('bypass');
    await cache.tombstone(hash);
    await cache.fillDead(hash);
    expect((await cache.get(hash)).kind).toBe('dead');
  });

  it('counts its rate limits in Redis, shared by replicas', async () => {
    const limit = { points: 2, seconds: 60 };
    const replica = () =>
      new RequestRateLimiter(user.client, {
        prefix: 'rl:sessions',
        perKey: limit,
        perAddress: null,
        trustedProxyHops: 1,
        logger,
      });
    const [a, b] = [replica(), replica()];
    const key = randomBytes(8).toString('hex');
    expect(await a.check(key, '192.0.2.1')).toBe(0);
    expect(await b.check(key, '192.0.2.1')).toBe(0);
    expect(await a.check(key, '192.0.2.1')).toBeGreaterThan(0); // b's request counted for a too: Redis holds the count
  });

  it('cannot reach the auth-service keys', async () => {
    await expect(redisCommand(user.client, ['GET', 'auth:rnd:someone'])).rejects.toThrow(/NOPERM/);
    await expect(redisCommand(user.client, ['SET', 'rl:auth:key:x', '1'])).rejects.toThrow(/NOPERM/);
  });
});
