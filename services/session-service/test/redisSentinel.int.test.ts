// REDIS_SENTINELS: the session-service finds its Redis through a real Sentinel and works there as
// its own ACL user (deploy/compose.yaml's rules), the same as with REDIS_URL.
import { randomBytes } from 'node:crypto';
import type { RedisSentinelType } from 'redis';
import { redisCall, redisCommand } from '@cp/redis';
import { SessionCache } from '@cp/session-cache';
import { connectAsServiceUser } from '../../../test-e2e/support/redisAcl';
import { startSentinel, type TestSentinel } from '../../../test-e2e/support/sentinel';
import { testStack } from '../../../test-e2e/support/stack';
import { loadConfig } from '../src/config';

describe('the session-service through Redis Sentinel', () => {
  let sentinel: TestSentinel;
  let user: Awaited<ReturnType<typeof connectAsServiceUser>>;
  const redisUrl = () => testStack().backing.REDIS_URL;

  beforeAll(async () => {
    sentinel = await startSentinel(redisUrl());
    user = await connectAsServiceUser(redisUrl(), 'session-service', {
      // What main.ts connects to: the target its config.ts makes of these variables.
      via: (username, password) =>
        loadConfig({
          ...serviceEnv(),
          REDIS_SENTINELS: `${sentinel.host}:${sentinel.port}`,
          REDIS_SENTINEL_MASTER: sentinel.master,
          REDIS_USERNAME: username,
          REDIS_PASSWORD: password,
        }).REDIS_TARGET,
    });
  });
  afterAll(async () => {
    await user?.close();
    await sentinel?.stop();
  });

  it('reaches the master the Sentinel names, as its own user', async () => {
    const redis = new URL(redisUrl());
    expect((user.client as RedisSentinelType).getMasterNode()).toEqual({
      host: redis.hostname,
      port: Number(redis.port || 6379),
    });
    expect(await redisCall(user.client, (r) => r.ping())).toBe('PONG');
  });

  it('caches, reads and tombstones sids there (SET NX EX, GET)', async () => {
    const cache = new SessionCache(user.client, 60);
    const sidHash = randomBytes(16).toString('hex');
    const session = { userId: 'u1', owners: ['o1'], familyId: 'f1', sidExpiresAt: Date.now() + 600_000 };
    await cache.fillLive(sidHash, session, Date.now());
    expect(await cache.get(sidHash)).toEqual({ kind: 'live', session });
    await cache.tombstone(sidHash);
    expect(await cache.get(sidHash)).toEqual({ kind: 'dead' });
    // The value is in the shared Redis itself: the Sentinel led to that master.
    const direct = await connectAsServiceUser(redisUrl(), 'session-service');
    try {
      expect(await redisCommand(direct.client, ['GET', `sess:${sidHash}`])).toBe('dead');
    } finally {
      await direct.close();
    }
  });

  it('still refuses what the user may not touch', async () => {
    await expect(redisCommand(user.client, ['GET', 'auth:rnd:someone'])).rejects.toThrow(/NOPERM/);
  });
});

function serviceEnv(): NodeJS.ProcessEnv {
  return {
    MONGODB_URL: 'mongodb://127.0.0.1:27017',
    INTERNAL_SECRET_AUTH_SERVICE: 'a'.repeat(16),
    INTERNAL_SECRET_CONTENT_SERVICE: 'c'.repeat(16),
  };
}
