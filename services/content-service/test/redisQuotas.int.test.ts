import { randomBytes, randomUUID } from 'node:crypto';
import { createLogger } from '@cp/logging';
import { closeRedis, connectRedis, type Redis } from '@cp/redis';
import { RedisQuotas, UNLIMITED } from '../src/store/RedisQuotas';
import { dropNamespace, redisReady } from './support/realStores';

/** RedisQuotas on the test Redis: reservations against a limit, counters that never go below zero, corrections. */
const logger = createLogger({ service: 'test', level: 'silent' });
const ns = `quota-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
let redis: Redis;
let quotas: RedisQuotas;

beforeAll(async () => {
  redis = connectRedis(process.env.REDIS_URL!, logger, { commandTimeoutMs: 5_000 });
  await redisReady(redis);
  quotas = new RedisQuotas(redis, ns);
});

afterAll(async () => {
  await dropNamespace(redis, ns).catch(() => undefined);
  await closeRedis(redis);
});

describe('RedisQuotas', () => {
  it('holds bytes while they fit under the default limit, and refuses with the limit and what is held', async () => {
    const owner = randomUUID();
    expect(await quotas.reserve(owner, 600, 1_000)).toEqual({ held: 600 });
    expect(await quotas.reserve(owner, 500, 1_000)).toEqual({ limit: 1_000, held: 600 });
    expect(await quotas.reserve(owner, 400, 1_000)).toEqual({ held: 400 });
    expect(await quotas.reserve(owner, 1, 1_000)).toEqual({ limit: 1_000, held: 1_000 });
    expect((await quotas.read(owner)).usage).toEqual({ used: 0, reserved: 1_000 });
    // Unlimited by default: anything is held.
    expect(await quotas.reserve(randomUUID(), 2 ** 40, UNLIMITED)).toEqual({ held: 2 ** 40 });
  });

  it('holds as much as fits when asked up to a size, and refuses only when nothing does', async () => {
    const owner = randomUUID();
    expect(await quotas.reserve(owner, 700, 1_000, true)).toEqual({ held: 700 });
    expect(await quotas.reserve(owner, 700, 1_000, true)).toEqual({ held: 300 });
    expect(await quotas.reserve(owner, 700, 1_000, true)).toEqual({ limit: 1_000, held: 1_000 });
  });

  it('lets only as many of 20 racing reservations through as fit', async () => {
    const owner = randomUUID();
    const answers = await Promise.all(Array.from({ length: 20 }, () => quotas.reserve(owner, 100, 1_050)));
    expect(answers.filter((a) => !('limit' in a))).toHaveLength(10);
    expect((await quotas.read(owner)).usage.reserved).toBe(1_000);
  });

  it('follows the owner’s own limit over the default, and goes back to the default', async () => {
    const owner = randomUUID();
    await quotas.setLimits(owner, { bytes: 100, uploads: 3 });
    expect((await quotas.read(owner)).limits).toEqual({ bytes: 100, uploads: 3 });
    expect(await quotas.reserve(owner, 101, UNLIMITED)).toEqual({ limit: 100, held: 0 });
    await quotas.setLimits(owner, { bytes: UNLIMITED });
    expect(await quotas.reserve(owner, 10 ** 12, 5)).toEqual({ held: 10 ** 12 });
    await quotas.setLimits(owner, { bytes: null });
    expect((await quotas.read(owner)).limits).toEqual({ bytes: null, uploads: 3 });
    expect(await quotas.reserve(owner, 1, 5)).toEqual({ limit: 5, held: 10 ** 12 });
  });

  it('moves counters by whole bytes past 2^32, never below zero, and corrects them by the difference found', async () => {
    const owner = randomUUID();
    await quotas.adjust(owner, 5 * 2 ** 32, 3 * 2 ** 33);
    expect((await quotas.read(owner)).usage).toEqual({ reserved: 5 * 2 ** 32, used: 3 * 2 ** 33 });
    await quotas.adjust(owner, -6 * 2 ** 32, -1);
    expect((await quotas.read(owner)).usage).toEqual({ reserved: 0, used: 3 * 2 ** 33 - 1 });
    // A recount read {used 10, reserved 0} before; requests counted +5 used meanwhile; the truth was {7, 2}.
    const before = { used: 10, reserved: 0 };
    await quotas.adjust(owner, 0, 10 - (3 * 2 ** 33 - 1));
    await quotas.adjust(owner, 0, 5);
    expect(await quotas.correct(owner, before, { used: 7, reserved: 2 })).toEqual({ used: 12, reserved: 2 });
  });
});
