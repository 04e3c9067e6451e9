// Sessions held in the Redis cache for as long as their sid lives: a sid used after any idle time
// is answered without MongoDB, and a revocation still ends it at once, or refuses with 503 and
// changes nothing. Real MongoDB-compatible server and Redis; a repository that fails on every call
// stands for MongoDB not being asked.
import { randomUUID } from 'node:crypto';
import { Db, MongoClient } from 'mongodb';
import { createLogger } from '@cp/logging';
import { closeRedis, connectRedis, type Redis } from '@cp/redis';
import { SessionCache, tokenHash } from '@cp/session-cache';
import type { RegistrationChecker } from '@cp/registry';
import { SessionService } from '../src/sessions/SessionService';
import { SessionSweeper } from '../src/sessions/SessionSweeper';
import { SessionRepository } from '../src/store/SessionRepository';
import { closedPort } from './support/closedPort';

const DAY = 24 * 3600 * 1000;
const SID_SECONDS = (30 * DAY) / 1000;
const logger = createLogger({ service: 'session-test', level: 'silent' });

describe('sessions held in the cache for their life', () => {
  let mongo: MongoClient;
  let db: Db;
  let redis: Redis;
  let deadRedis: Redis;
  let service: SessionService;
  let withoutRedis: SessionService;
  let withoutMongo: SessionService;
  const askedMongo: string[] = [];
  const lifetimes = { sidTtlMs: 30 * DAY, refreshTtlMs: 45 * DAY };
  const registered: RegistrationChecker = {
    check: async (userId) => ({
      registered: true,
      owners: (await db.collection('session_families').findOne({ userId }))?.owners ?? [],
    }),
  };
  const clock = () => new Date();
  const make = (repo: SessionRepository, r: Redis) =>
    new SessionService(repo, new SessionCache(r, 60, SID_SECONDS), clock, lifetimes, logger, registered);

  beforeAll(async () => {
    mongo = await new MongoClient(process.env.MONGODB_URL ?? 'mongodb://127.0.0.1:27017/').connect();
    db = mongo.db(`held-sessions-${randomUUID().slice(0, 8)}`);
    const repo = new SessionRepository(db);
    await repo.ensureIndexes();
    redis = connectRedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', logger);
    for (let i = 0; i < 250 && !redis.isReady; i++) await new Promise((r) => setTimeout(r, 20));
    deadRedis = connectRedis(`redis://127.0.0.1:${await closedPort()}`, logger);
    service = make(repo, redis);
    withoutRedis = make(new SessionRepository(db), deadRedis);
    const noMongo = new Proxy({} as SessionRepository, {
      get: (_target, name) => () => {
        askedMongo.push(String(name));
        return Promise.reject(new Error('MongoDB was asked'));
      },
    });
    withoutMongo = make(noMongo, redis);
  });

  afterAll(async () => {
    await db?.dropDatabase().catch(() => undefined);
    await mongo?.close();
    if (redis) await closeRedis(redis);
    deadRedis?.destroy();
  });

  beforeEach(() => {
    askedMongo.length = 0;
  });

  const ttlOf = (sid: string) => redis.ttl(`sess:${tokenHash(sid)}`);

  it('answers a signed-in sid from the cache for as long as it lives, without MongoDB', async () => {
    const owners = [randomUUID()];
    const pair = await service.create(randomUUID(), owners, 'ab12');
    const ttl = await ttlOf(pair.Sid);
    console.log(`a new sid is cached for ${ttl} s (its life: ${SID_SECONDS} s)`);
    expect(ttl).toBeGreaterThan(SID_SECONDS - 60);
    expect(await withoutMongo.validate(pair.Sid)).toEqual({ userId: expect.any(String), owners, thumbprint: 'AB12' });
    expect(askedMongo).toEqual([]);
  });

  it('holds the new pair of a refresh likewise, and answers the old sid dead', async () => {
    const owners = [randomUUID()];
    const pair = await service.create(randomUUID(), owners);
    const next = await service.refresh(pair.Sid, pair.RefreshToken);
    expect(await ttlOf(next.Sid)).toBeGreaterThan(SID_SECONDS - 60);
    expect(await withoutMongo.validate(next.Sid)).toEqual({ userId: expect.any(String), owners });
    expect(await withoutMongo.validate(pair.Sid)).toBeNull();
    expect(askedMongo).toEqual([]);
  });

  it('ends a revoked sid at once, for its whole life, whatever fill comes late', async () => {
    const userId = randomUUID();
    const pair = await service.create(userId, [randomUUID()]);
    expect(await service.revokeUser(userId)).toBe(1);
    expect(await withoutMongo.validate(pair.Sid)).toBeNull();
    expect(await ttlOf(pair.Sid)).toBeGreaterThan(SID_SECONDS - 60);
    // A writer or a reader that read MongoDB before the revocation, landing late: the tombstone stays.
    const cache = new SessionCache(redis, 60, SID_SECONDS);
    const stale = { userId, owners: ['o'], familyId: 'f', sidExpiresAt: Date.now() + DAY };
    await cache.hold(tokenHash(pair.Sid)!, stale, Date.now());
    await cache.fillLive(tokenHash(pair.Sid)!, stale, Date.now());
    expect(await withoutMongo.validate(pair.Sid)).toBeNull();
    await expect(service.refresh(pair.Sid, pair.RefreshToken)).rejects.toMatchObject({ status: 403 });
  });

  it('refuses a revocation with 503 while Redis does not answer, revoking nothing', async () => {
    const userId = randomUUID();
    const pair = await service.create(userId, [randomUUID()]);
    await expect(withoutRedis.revokeUser(userId)).rejects.toMatchObject({ status: 503 });
    // Still a live session everywhere: a cached sid that would outlive a revocation cannot happen.
    expect(await service.validate(pair.Sid)).not.toBeNull();
    expect(await db.collection('session_families').findOne({ userId, revokedAt: null })).not.toBeNull();
    expect(await service.revokeUser(userId)).toBe(1);
    expect(await service.validate(pair.Sid)).toBeNull();
  });

  it('puts back, at the next sweep, a revocation tombstone that Redis lost', async () => {
    const userId = randomUUID();
    const owners = [randomUUID()];
    const pair = await service.create(userId, owners);
    const hash = tokenHash(pair.Sid)!;
    const before = await redis.get(`sess:${hash}`);
    await service.revokeUser(userId);
    // Redis restarts from a file that missed the revocation: the sid is held as it was before it.
    await redis.set(`sess:${hash}`, before!, { EX: SID_SECONDS });
    expect(await withoutMongo.validate(pair.Sid)).toEqual({ userId, owners });
    const sweeper = new SessionSweeper(
      new SessionRepository(db),
      clock,
      logger,
      { intervalMs: 60_000, familyMaxAgeMs: 45 * DAY },
      () => service.reassertRevocations(),
    );
    await sweeper.sweepOnce();
    expect(await withoutMongo.validate(pair.Sid)).toBeNull();
    expect(await ttlOf(pair.Sid)).toBeGreaterThan(SID_SECONDS - 60);
  });

  it('signs in without Redis (its sid then read from MongoDB)', async () => {
    const owners = [randomUUID()];
    const pair = await withoutRedis.create(randomUUID(), owners);
    expect(await withoutRedis.validate(pair.Sid)).toEqual({ userId: expect.any(String), owners });
    expect(await redis.exists(`sess:${tokenHash(pair.Sid)}`)).toBe(0);
  });

  describe('a sid the cache lost, answered from MongoDB', () => {
    // Counts the repository's calls of one lookup.
    const counted = () => {
      const calls: string[] = [];
      const repo = new SessionRepository(db);
      const spy = new Proxy(repo, {
        get: (target, name, receiver) => {
          const value = Reflect.get(target, name, receiver) as unknown;
          if (typeof value !== 'function') return value;
          return (...args: unknown[]) => {
            calls.push(String(name));
            return (value as (...a: unknown[]) => unknown).apply(target, args);
          };
        },
      });
      return { calls, lookups: make(spy, redis) };
    };
    const forget = (sid: string) => redis.del(`sess:${tokenHash(sid)}`);

    it('reads the pair alone, which carries its family: one lookup by _id', async () => {
      const owners = [randomUUID()];
      const pair = await service.create(randomUUID(), owners, 'cd34');
      await forget(pair.Sid);
      const { calls, lookups } = counted();
      expect(await lookups.validate(pair.Sid)).toEqual({ userId: expect.any(String), owners, thumbprint: 'CD34' });
      expect(calls).toEqual(['findPairBySid']);
      // The refreshed pair likewise; the rotated one, marked before its claim, reads the claim too.
      const next = await service.refresh(pair.Sid, pair.RefreshToken);
      await Promise.all([forget(pair.Sid), forget(next.Sid)]);
      calls.length = 0;
      expect(await lookups.validate(next.Sid)).toEqual({ userId: expect.any(String), owners, thumbprint: 'CD34' });
      expect(calls).toEqual(['findPairBySid']);
    });

    it('answers a rotated sid dead when a crash left its pair behind (the pair is marked before the claim)', async () => {
      const pair = await service.create(randomUUID(), [randomUUID()]);
      const hash = tokenHash(pair.Sid)!;
      const stored = (await db.collection('session_pairs').findOne({ _id: hash as never }))!;
      await service.refresh(pair.Sid, pair.RefreshToken);
      // The rotation's last step (deleting the old pair) never happened, and Redis lost its tombstone.
      await db.collection('session_pairs').insertOne({ ...stored, rotating: true });
      await forget(pair.Sid);
      const { calls, lookups } = counted();
      expect(await lookups.validate(pair.Sid)).toBeNull();
      expect(calls).toEqual(['findPairBySid', 'findRotation']);
    });

    it('answers a revoked sid dead from its pair, marked before and after its family', async () => {
      const userId = randomUUID();
      const pair = await service.create(userId, [randomUUID()]);
      await service.revokeUser(userId);
      const doc = await db.collection('session_pairs').findOne({ _id: tokenHash(pair.Sid) as never });
      expect(doc?.revokedAt).toBeInstanceOf(Date);
      await forget(pair.Sid); // Redis lost the tombstone
      expect(await service.validate(pair.Sid)).toBeNull();
    });

    it('marks, at the next sweep, the pairs of a family revoked without them', async () => {
      const userId = randomUUID();
      const owners = [randomUUID()];
      const pair = await service.create(userId, owners);
      const hash = tokenHash(pair.Sid)!;
      const familyId = (await db.collection('session_pairs').findOne({ _id: hash as never }))!.familyId as string;
      // A revocation cut short after the family's mark, or written by a replica that did not mark pairs.
      await new SessionRepository(db).revokeFamily(familyId, new Date());
      await forget(pair.Sid);
      expect(await service.validate(pair.Sid)).toEqual({ userId, owners });
      await forget(pair.Sid);
      await service.reassertRevocations();
      await forget(pair.Sid);
      expect(await service.validate(pair.Sid)).toBeNull();
    });

    it("refreshes from the sid's pair and the token's claim: no family read before the claim", async () => {
      const pair = await service.create(randomUUID(), [randomUUID()], 'ab12');
      const { calls, lookups } = counted();
      const next = await lookups.refresh(pair.Sid, pair.RefreshToken);
      expect(calls.slice(0, 2).sort()).toEqual(['findPairBySid', 'findRotation']);
      expect(calls.slice(2)).toEqual(['markRotating', 'claimRotation', 'ensurePair', 'deletePair', 'findFamily']);
      // A live token with another sid, and an unknown token, are still told apart.
      const other = await service.create(randomUUID(), [randomUUID()]);
      await expect(lookups.refresh(other.Sid, next.RefreshToken)).rejects.toMatchObject({ code: 'SidMismatch' });
      const unknown = next.RefreshToken.replace(/^./, (c) => (c === 'A' ? 'B' : 'A'));
      await expect(lookups.refresh(next.Sid, unknown)).rejects.toMatchObject({ code: 'InvalidRefreshToken' });
      // The next pair carries the sign-in time as well: its refresh reads no family before the claim either.
      calls.length = 0;
      expect((await lookups.refresh(next.Sid, next.RefreshToken)).Sid).toEqual(expect.any(String));
      expect(calls.filter((c) => c === 'findFamily')).toHaveLength(1);
    });

    it('refuses the refresh of a family revoked before its pair was marked, after the claim', async () => {
      const pair = await service.create(randomUUID(), [randomUUID()]);
      const familyId = (await db.collection('session_pairs').findOne({ _id: tokenHash(pair.Sid) as never }))!
        .familyId as string;
      // A revocation cut short after the family's mark: the pair says nothing yet.
      await new SessionRepository(db).revokeFamily(familyId, new Date());
      await expect(service.refresh(pair.Sid, pair.RefreshToken)).rejects.toMatchObject({ code: 'SessionRevoked' });
      const pairs = await db.collection('session_pairs').find({ familyId }).toArray();
      expect(pairs.length).toBeGreaterThan(0);
      for (const p of pairs) expect(p.revokedAt).toBeInstanceOf(Date);
      expect(await service.validate(pair.Sid)).toBeNull();
    });

    it('refreshes a pair stored before pairs carried the sign-in time by reading its family', async () => {
      const pair = await service.create(randomUUID(), [randomUUID()]);
      const hash = tokenHash(pair.Sid)!;
      await db.collection('session_pairs').updateOne({ _id: hash as never }, { $unset: { familyCreatedAt: '' } });
      const { calls, lookups } = counted();
      expect((await lookups.refresh(pair.Sid, pair.RefreshToken)).Sid).toEqual(expect.any(String));
      expect(calls.filter((c) => c === 'findFamily')).toHaveLength(2);
    });

    it('answers a pair stored before pairs carried their family from its family and its claim', async () => {
      const userId = randomUUID();
      const owners = [randomUUID()];
      const pair = await service.create(userId, owners, 'ef56');
      const hash = tokenHash(pair.Sid)!;
      await db
        .collection('session_pairs')
        .updateOne({ _id: hash as never }, { $unset: { carriesFamily: '', thumbprint: '' } });
      await forget(pair.Sid);
      const { calls, lookups } = counted();
      expect(await lookups.validate(pair.Sid)).toEqual({ userId, owners, thumbprint: 'EF56' });
      expect(calls.sort()).toEqual(['findFamily', 'findPairBySid', 'findRotation']);
      const familyId = (await db.collection('session_pairs').findOne({ _id: hash as never }))!.familyId as string;
      await new SessionRepository(db).revokeFamily(familyId, new Date());
      await forget(pair.Sid);
      expect(await lookups.validate(pair.Sid)).toBeNull();
    });
  });
});
