import { randomBytes } from 'node:crypto';
import { Registry } from 'prom-client';
import type { Principal } from '../src/http/Principal';
import { createLogger } from '@cp/logging';
import { closeRedis, connectRedis, type Redis } from '@cp/redis';
import { SessionCache, tokenHash } from '@cp/session-cache';
import { CachedSessionValidator } from '../src/http/CachedSessionValidator';
import type { SessionValidator } from '../src/http/authenticate';

/** auth.sid answered from the session-service's Redis cache (real Redis), the session-service asked otherwise. */
describe('CachedSessionValidator', () => {
  const logger = createLogger({ service: 'test', level: 'silent' });
  const now = Date.parse('2026-06-01T00:00:00Z');
  let redis: Redis;
  let cache: SessionCache;
  const asked: string[] = [];
  const fromSessionService: Principal = { kind: 'session', subject: 'asked', owners: ['ab'] };
  const sessionService: SessionValidator = {
    validate: async (sid) => {
      asked.push(sid);
      return fromSessionService;
    },
  };
  const newSid = () => randomBytes(32).toString('hex').toUpperCase();
  const live = (sidExpiresAt: number) => ({ userId: 'u-1', owners: ['AB', 'cd'], familyId: 'f-1', sidExpiresAt });

  beforeAll(async () => {
    redis = connectRedis(process.env.REDIS_URL!, logger);
    while (!redis.isReady) await new Promise((r) => setTimeout(r, 20));
    cache = new SessionCache(redis, 60);
  });

  afterAll(async () => {
    await closeRedis(redis);
  });

  beforeEach(() => {
    asked.length = 0;
  });

  const validator = () => new CachedSessionValidator(cache, sessionService, () => new Date(now));

  it('answers a cached live session itself, and refuses one whose sid has expired meanwhile', async () => {
    const sid = newSid();
    await cache.fillLive(tokenHash(sid)!, live(now + 60_000), now);
    expect(await validator().validate(sid)).toEqual({ kind: 'session', subject: 'u-1', owners: ['ab', 'cd'] });
    const expired = newSid();
    await cache.fillLive(tokenHash(expired)!, live(now + 30_000), now);
    expect(
      await new CachedSessionValidator(cache, sessionService, () => new Date(now + 31_000)).validate(expired),
    ).toBeNull();
    expect(asked).toEqual([]);
  });

  it('refuses a tombstoned sid (rotated, revoked) without asking', async () => {
    const sid = newSid();
    await cache.fillLive(tokenHash(sid)!, live(now + 60_000), now);
    await cache.tombstone(tokenHash(sid)!);
    expect(await validator().validate(sid)).toBeNull();
    expect(asked).toEqual([]);
  });

  it('asks the session-service on a miss and while a rotation is under way', async () => {
    const missing = newSid();
    const rotating = newSid();
    await cache.bypass(tokenHash(rotating)!);
    expect(await validator().validate(missing)).toBe(fromSessionService);
    expect(await validator().validate(rotating)).toBe(fromSessionService);
    expect(asked).toEqual([missing, rotating]);
  });

  it('counts who answered each check on /metrics', async () => {
    const registry = new Registry();
    const counted = new CachedSessionValidator(cache, sessionService, () => new Date(now), registry);
    const alive = newSid();
    const gone = newSid();
    await cache.fillLive(tokenHash(alive)!, live(now + 60_000), now);
    await cache.tombstone(tokenHash(gone)!);
    await counted.validate(alive);
    await counted.validate(gone);
    await counted.validate(newSid());
    const values = (await registry.getSingleMetric('content_sid_checks_total')!.get()).values.map((v) => [
      v.labels.by,
      v.value,
    ]);
    expect(Object.fromEntries(values)).toEqual({ cache: 2, 'session-service': 1 });
  });

  it('refuses text that is not a sid at all without asking', async () => {
    expect(await validator().validate('not-a-sid')).toBeNull();
    expect(asked).toEqual([]);
  });

  it('asks the session-service when Redis does not answer', async () => {
    const down = connectRedis('redis://127.0.0.1:1', logger);
    try {
      const sid = newSid();
      expect(
        await new CachedSessionValidator(new SessionCache(down), sessionService, () => new Date(now)).validate(sid),
      ).toBe(fromSessionService);
      expect(asked).toEqual([sid]);
    } finally {
      await closeRedis(down);
    }
  });
});
