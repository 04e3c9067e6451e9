// SessionService in process against the real MongoDB-compatible server and Redis: two instances
// sharing both stand for two replicas; a client pointed at a closed port stands for Redis down.
import { randomUUID } from 'node:crypto';
import { Db, MongoClient } from 'mongodb';
import { ServiceError } from '@cp/errors';
import { createLogger } from '@cp/logging';
import type { Clock } from '@cp/service-kit';
import { SessionService } from '../src/sessions/SessionService';
import { SessionCache, tokenHash } from '@cp/session-cache';
import { closeRedis, connectRedis, type Redis } from '@cp/redis';
import type { RegistrationChecker } from '@cp/registry';
import { SessionRepository } from '../src/store/SessionRepository';
import { closedPort } from './support/closedPort';

const DAY = 24 * 3600 * 1000;
const logger = createLogger({ service: 'session-test', level: 'silent' });

class MovableClock {
  offsetMs = 0;
  readonly now: Clock = () => new Date(Date.now() + this.offsetMs);
}

async function ready(redis: Redis): Promise<Redis> {
  const deadline = Date.now() + 5_000;
  while (!redis.isReady && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  return redis;
}

describe('sessions against MongoDB and Redis', () => {
  const clock = new MovableClock();
  let mongo: MongoClient;
  let db: Db;
  let redis: Redis;
  let deadRedis: Redis;
  let repo: SessionRepository;
  const lifetimes = { sidTtlMs: 30 * DAY, refreshTtlMs: 45 * DAY };
  let replicaA: SessionService;
  let replicaB: SessionService;
  let withoutRedis: SessionService;
  // The auth-service's answer while nobody removes anything: the owners the user signed in with
  // (refresh.int.test.ts covers removals and changed owners).
  const stillRegistered: RegistrationChecker = {
    check: async (userId) => ({
      registered: true,
      owners: (await db.collection('session_families').findOne({ userId }))?.owners ?? [],
    }),
  };

  beforeAll(async () => {
    const url = process.env.MONGODB_URL ?? 'mongodb://127.0.0.1:27017/';
    mongo = await new MongoClient(url).connect();
    db = mongo.db(`sessions-int-${randomUUID().slice(0, 8)}`);
    repo = new SessionRepository(db);
    await repo.ensureIndexes();
    redis = await ready(connectRedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', logger));
    deadRedis = connectRedis(`redis://127.0.0.1:${await closedPort()}`, logger);
    replicaA = new SessionService(repo, new SessionCache(redis, 60), clock.now, lifetimes, logger, stillRegistered);
    replicaB = new SessionService(
      new SessionRepository(db),
      new SessionCache(redis, 60),
      clock.now,
      lifetimes,
      logger,
      stillRegistered,
    );
    withoutRedis = new SessionService(
      new SessionRepository(db),
      new SessionCache(deadRedis, 60),
      clock.now,
      lifetimes,
      logger,
      stillRegistered,
    );
  });

  afterAll(async () => {
    await db?.dropDatabase().catch(() => undefined);
    await mongo?.close();
    if (redis) await closeRedis(redis);
    deadRedis?.destroy();
  });

  afterEach(() => {
    clock.offsetMs = 0;
  });

  it('stores only SHA-256 hashes of the Sid and the RefreshToken', async () => {
    const pair = await replicaA.create(randomUUID(), [randomUUID()]);
    const text = JSON.stringify(await db.collection('session_pairs').find({}).toArray());
    expect(text).not.toContain(pair.Sid);
    expect(text).not.toContain(pair.RefreshToken);
    expect(await repo.findPairBySid(tokenHash(pair.Sid)!)).not.toBeNull();
  });

  it('invalidates the old sid on a replica that had it cached when another replica refreshes', async () => {
    const owners = [randomUUID()];
    const pair = await replicaA.create(randomUUID(), owners);
    expect(await replicaA.validate(pair.Sid)).toEqual({ userId: expect.any(String), owners });
    expect(await redis.get(`sess:${tokenHash(pair.Sid)}`)).not.toBeNull(); // cached by A
    const next = await replicaB.refresh(pair.Sid, pair.RefreshToken);
    expect(await replicaA.validate(pair.Sid)).toBeNull();
    expect(await replicaA.validate(next.Sid)).toEqual({ userId: expect.any(String), owners });
  });

  it('never answers from a cached entry once the family is revoked by a reuse', async () => {
    const pair = await replicaA.create(randomUUID(), [randomUUID()]);
    const next = await replicaA.refresh(pair.Sid, pair.RefreshToken);
    expect(await replicaA.validate(next.Sid)).not.toBeNull(); // now cached
    clock.offsetMs = 31_000; // past the grace window (30 s), in which a retry gets `next` back
    await expect(replicaB.refresh(pair.Sid, pair.RefreshToken)).rejects.toMatchObject({
      status: 403,
      code: 'RefreshTokenReused',
    });
    expect(await replicaA.validate(next.Sid)).toBeNull();
    await expect(replicaA.refresh(next.Sid, next.RefreshToken)).rejects.toMatchObject({ status: 403 });
  });

  it('keeps a late cache fill from bringing back a rotated sid (NX loses to the tombstone)', async () => {
    const pair = await replicaA.create(randomUUID(), [randomUUID()]);
    const hash = tokenHash(pair.Sid)!;
    const cache = new SessionCache(redis, 60);
    await replicaB.refresh(pair.Sid, pair.RefreshToken);
    // A reader that looked at MongoDB before the rotation now tries to cache what it saw.
    await cache.fillLive(
      hash,
      { userId: 'u', owners: ['o'], familyId: 'f', sidExpiresAt: Date.now() + DAY },
      Date.now(),
    );
    expect(await cache.get(hash)).toEqual({ kind: 'dead' });
    expect(await replicaA.validate(pair.Sid)).toBeNull();
  });

  it('with Redis down, validates from MongoDB and refuses to refresh with 503, changing nothing', async () => {
    const owners = [randomUUID()];
    const pair = await withoutRedis.create(randomUUID(), owners);
    expect(await withoutRedis.validate(pair.Sid)).toEqual({ userId: expect.any(String), owners });
    const refused = await withoutRedis.refresh(pair.Sid, pair.RefreshToken).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ServiceError);
    expect((refused as ServiceError).status).toBe(503);
    // Nothing was rotated: the pair still refreshes where Redis answers.
    const next = await replicaA.refresh(pair.Sid, pair.RefreshToken);
    // And a rotation done elsewhere is seen at once without Redis.
    expect(await withoutRedis.validate(pair.Sid)).toBeNull();
    expect(await withoutRedis.validate(next.Sid)).toEqual({ userId: expect.any(String), owners });
  });

  it('expires the sid after 30 days, still refreshes it until the refresh token expires at 45 days', async () => {
    const pair = await replicaA.create(randomUUID(), [randomUUID()]);
    clock.offsetMs = 30 * DAY + 1_000;
    expect(await replicaA.validate(pair.Sid)).toBeNull();
    const next = await replicaA.refresh(pair.Sid, pair.RefreshToken);
    expect(await replicaA.validate(next.Sid)).not.toBeNull();
    clock.offsetMs += 45 * DAY + 1_000;
    await expect(replicaA.refresh(next.Sid, next.RefreshToken)).rejects.toMatchObject({
      status: 403,
      code: 'RefreshTokenExpired',
    });
  });

  it('expires a cached sid by its own expiry time, not the cache entry lifetime', async () => {
    const pair = await replicaA.create(randomUUID(), [randomUUID()]);
    expect(await replicaA.validate(pair.Sid)).not.toBeNull(); // cached for up to 60 s
    clock.offsetMs = 30 * DAY + 1_000;
    expect(await replicaA.validate(pair.Sid)).toBeNull();
  });

  it('sweeps expired pairs, rotation claims and finished families', async () => {
    const pair = await replicaA.create(randomUUID(), [randomUUID()]);
    await replicaA.refresh(pair.Sid, pair.RefreshToken);
    const family = (await db.collection('session_families').find({}).sort({ createdAt: -1 }).limit(1).toArray())[0]!;
    const sweeper = new SessionRepository(db);
    await sweeper.sweep(new Date(Date.now() + 46 * DAY), 45 * DAY, 10_000);
    expect(await db.collection('session_pairs').countDocuments({ familyId: family._id })).toBe(0);
    expect(await db.collection('session_rotations').countDocuments({ familyId: family._id })).toBe(0);
    expect(await db.collection('session_families').countDocuments({ _id: family._id })).toBe(0);
  });
});
