// The auth-service's Redis user (deploy/compose.yaml, k8s): rnds (Lua scripts) and rate limits
// work with exactly the keys and commands that user is granted.
import { randomBytes, randomUUID } from 'node:crypto';
import { createLogger } from '@cp/logging';
import { RequestRateLimiter } from '@cp/rate-limit';
import { redisCommand } from '@cp/redis';
import { connectAsServiceUser } from '../../../test-e2e/support/redisAcl';
import { testStack } from '../../../test-e2e/support/stack';
import { RND_SCRIPTS, RndStore } from '../src/store/RndStore';

describe("the auth-service's Redis user", () => {
  let user: Awaited<ReturnType<typeof connectAsServiceUser>>;
  const logger = createLogger({ service: 'acl-test', level: 'silent' });
  beforeAll(async () => {
    user = await connectAsServiceUser(testStack().backing.REDIS_URL, 'auth-service', { scripts: RND_SCRIPTS });
  });
  afterAll(async () => {
    await user?.close();
  });

  it('stores, counts wrong tries on and consumes an rnd', async () => {
    const rnds = new RndStore(user.client, 2);
    const userId = randomUUID();
    const rnd = randomBytes(48);
    const now = new Date();
    await rnds.put(userId, rnd, 'AB', new Date(now.getTime() + 60_000), 60);
    expect(await rnds.approve(userId, randomBytes(48), 'AB', now)).toEqual({ outcome: 'wrong' });
    expect(await rnds.approve(userId, rnd, 'AB', now)).toMatchObject({ outcome: 'ok' });
    expect(await rnds.approve(userId, rnd, 'AB', now)).toEqual({ outcome: 'missing' });
    await rnds.restore(userId, rnd, 'AB', new Date(now.getTime() + 60_000), now);
    expect(await rnds.approve(userId, rnd, 'AB', now)).toMatchObject({ outcome: 'ok' });
  });

  it('counts its rate limits in Redis, shared by replicas', async () => {
    const limit = { points: 2, seconds: 60 };
    const replica = () =>
      new RequestRateLimiter(user.client, {
        prefix: 'rl:auth',
        perKey: null,
        perAddress: limit,
        trustedProxyHops: 1,
        logger,
      });
    const [a, b] = [replica(), replica()];
    const address = `10.${[...randomBytes(3)].join('.')}`;
    expect(await a.check(undefined, address)).toBe(0);
    expect(await b.check(undefined, address)).toBe(0);
    expect(await a.check(undefined, address)).toBeGreaterThan(0);
  });

  it('cannot reach the sid cache or the session-service rate limits', async () => {
    await expect(redisCommand(user.client, ['GET', 'sess:x'])).rejects.toThrow(/NOPERM/);
    await expect(redisCommand(user.client, ['SET', 'rl:sessions:key:x', '1'])).rejects.toThrow(/NOPERM/);
  });
});
