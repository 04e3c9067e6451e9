// Refresh against the real MongoDB-compatible server and Redis: the grace window for a lost
// answer, concurrent refreshes with one token, a crash at each step after the rotation claim,
// the maximum session lifetime, and the registration check. The auth-service's registration
// check is stood in for by an in-memory registry (test-e2e/signin-refresh covers the real one).
import { randomUUID } from 'node:crypto';
import { Db, MongoClient } from 'mongodb';
import { ServiceError } from '@cp/errors';
import { createLogger } from '@cp/logging';
import { closeRedis, connectRedis, type Redis } from '@cp/redis';
import { SessionCache, tokenHash } from '@cp/session-cache';
import type { Clock } from '@cp/service-kit';
import { openPair } from '../src/sessions/SealedPair';
import { SessionService, type IssuedPair, type SessionLifetimes } from '../src/sessions/SessionService';
import type { Registration, RegistrationChecker } from '@cp/registry';
import { SessionRepository, type PairDoc, type RotationDoc } from '../src/store/SessionRepository';

const DAY = 24 * 3600 * 1000;
const GRACE_MS = 30_000;
const logger = createLogger({ service: 'refresh-test', level: 'silent' });

class MovableClock {
  offsetMs = 0;
  readonly now: Clock = () => new Date(Date.now() + this.offsetMs);
}

/** Users, owners and certificates as the auth-service would answer for them. */
class Registry implements RegistrationChecker {
  readonly users = new Map<string, string[]>();
  readonly certs = new Map<string, string>(); // thumbprint → userId
  readonly asked: { userId: string; thumbprint: string | undefined }[] = [];
  down = false;

  add(owners = [randomUUID()]): { userId: string; owners: string[]; thumbprint: string } {
    const userId = randomUUID();
    const thumbprint = randomUUID().replace(/-/g, '').padEnd(40, 'A').toUpperCase();
    this.users.set(userId, owners);
    this.certs.set(thumbprint, userId);
    return { userId, owners, thumbprint };
  }

  async check(userId: string, thumbprint: string | undefined): Promise<Registration> {
    this.asked.push({ userId, thumbprint });
    if (this.down)
      throw ServiceError.of('ServiceUnavailable', 'the registration of the user cannot be checked now; retry later');
    const owners = this.users.get(userId);
    if (!owners) return { registered: false, reason: 'UserRemoved' };
    if (thumbprint !== undefined && this.certs.get(thumbprint) !== userId)
      return { registered: false, reason: 'CertificateRemoved' };
    return { registered: true, owners };
  }
}

class Killed extends Error {}

/** A repository whose process "dies" at one step: the step's writes happen, nothing after them. */
class CrashingRepository extends SessionRepository {
  constructor(
    db: Db,
    private readonly at: 'after-claim' | 'between-pair-and-refresh-key' | 'after-pair',
  ) {
    super(db);
  }
  override async claimRotation(doc: RotationDoc): Promise<boolean> {
    const won = await super.claimRotation(doc);
    if (won && this.at === 'after-claim') throw new Killed();
    return won;
  }
  override async ensurePair(doc: PairDoc): Promise<void> {
    if (this.at === 'between-pair-and-refresh-key') {
      await this.pairs.insertOne(doc);
      throw new Killed();
    }
    await super.ensurePair(doc);
    if (this.at === 'after-pair') throw new Killed();
  }
}

async function ready(redis: Redis): Promise<Redis> {
  const deadline = Date.now() + 5_000;
  while (!redis.isReady && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  return redis;
}

describe('refresh: grace, concurrency, crashes, lifetime and registration', () => {
  const clock = new MovableClock();
  const registry = new Registry();
  const lifetimes: SessionLifetimes = {
    sidTtlMs: 30 * DAY,
    refreshTtlMs: 45 * DAY,
    maxLifetimeMs: 90 * DAY,
    graceMs: GRACE_MS,
  };
  let mongo: MongoClient;
  let db: Db;
  let redis: Redis;
  let repo: SessionRepository;
  let replicaA: SessionService;
  let replicaB: SessionService;

  const service = (r: SessionRepository, l: SessionLifetimes = lifetimes): SessionService =>
    new SessionService(r, new SessionCache(redis, 60), clock.now, l, logger, registry);

  async function signIn(
    owners?: string[],
  ): Promise<IssuedPair & { userId: string; owners: string[]; thumbprint: string }> {
    const user = registry.add(owners);
    return { ...user, ...(await replicaA.create(user.userId, user.owners, user.thumbprint)) };
  }

  async function familyOf(pair: IssuedPair): Promise<string> {
    const doc = await repo.findPairBySid(tokenHash(pair.Sid)!);
    if (!doc) throw new Error('no pair');
    return doc.familyId;
  }

  const pairsOf = (familyId: string) => db.collection('session_pairs').find({ familyId }).toArray();
  const revokedAt = async (familyId: string) => (await repo.findFamily(familyId))?.revokedAt ?? null;

  beforeAll(async () => {
    mongo = await new MongoClient(process.env.MONGODB_URL ?? 'mongodb://127.0.0.1:27017/').connect();
    db = mongo.db(`refresh-int-${randomUUID().slice(0, 8)}`);
    repo = new SessionRepository(db);
    await repo.ensureIndexes();
    redis = await ready(connectRedis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', logger));
    replicaA = service(repo);
    replicaB = service(new SessionRepository(db));
  });

  afterAll(async () => {
    await db?.dropDatabase().catch(() => undefined);
    await mongo?.close();
    if (redis) await closeRedis(redis);
  });

  afterEach(() => {
    clock.offsetMs = 0;
    registry.down = false;
  });

  describe('a lost answer', () => {
    it('gets the identical pair when the rotated token and its sid come back within the grace window; the old sid stays dead', async () => {
      const first = await signIn();
      const familyId = await familyOf(first);
      const second = await replicaA.refresh(first.Sid, first.RefreshToken);
      clock.offsetMs = GRACE_MS - 2_000;
      const again = await replicaB.refresh(first.Sid, first.RefreshToken);
      expect(again).toEqual(second);
      expect(await replicaA.validate(first.Sid)).toBeNull();
      expect(await replicaB.validate(second.Sid)).toEqual({
        userId: first.userId,
        owners: first.owners,
        thumbprint: first.thumbprint,
      });
      expect(await revokedAt(familyId)).toBeNull();
      expect(await pairsOf(familyId)).toHaveLength(1);
      // The pair got back is the live one: it refreshes, and then the old token is a reuse.
      const third = await replicaA.refresh(second.Sid, second.RefreshToken);
      await expect(replicaA.refresh(first.Sid, first.RefreshToken)).rejects.toMatchObject({
        status: 403,
        code: 'RefreshTokenReused',
      });
      expect(await replicaA.validate(third.Sid)).toBeNull();
      expect(await revokedAt(familyId)).toBeInstanceOf(Date);
    });

    it('revokes the family when the rotated token comes back after the grace window (RFC 9700)', async () => {
      const first = await signIn();
      const second = await replicaA.refresh(first.Sid, first.RefreshToken);
      clock.offsetMs = GRACE_MS + 1_000;
      await expect(replicaB.refresh(first.Sid, first.RefreshToken)).rejects.toMatchObject({
        status: 403,
        code: 'RefreshTokenReused',
      });
      expect(await replicaA.validate(second.Sid)).toBeNull();
      await expect(replicaA.refresh(second.Sid, second.RefreshToken)).rejects.toMatchObject({ status: 403 });
      expect(await revokedAt(await familyOf(second))).toBeInstanceOf(Date);
    });

    it('treats the rotated token with any other sid as a reuse, even within the window', async () => {
      const first = await signIn();
      const second = await replicaA.refresh(first.Sid, first.RefreshToken);
      await expect(replicaA.refresh(second.Sid, first.RefreshToken)).rejects.toMatchObject({
        status: 403,
        code: 'RefreshTokenReused',
      });
      expect(await replicaA.validate(second.Sid)).toBeNull();
    });

    it('keeps in the database only an encrypted pair that the stored hashes cannot open, erased by the sweeper after the window', async () => {
      const first = await signIn();
      const second = await replicaA.refresh(first.Sid, first.RefreshToken);
      const rotation = await repo.findRotation(tokenHash(first.RefreshToken)!);
      const stored =
        JSON.stringify(await db.collection('session_rotations').find({}).toArray()) +
        JSON.stringify(await db.collection('session_pairs').find({}).toArray());
      for (const token of [first.Sid, first.RefreshToken, second.Sid, second.RefreshToken])
        expect(stored.toUpperCase()).not.toContain(token);
      expect(rotation?.sealed).toEqual(expect.any(String));
      // What a leak gives: the hashes. Neither opens the sealed pair; the token itself does.
      expect(openPair(rotation!._id.toUpperCase(), rotation!._id, rotation!.sealed!)).toBeNull();
      expect(openPair(first.RefreshToken, rotation!._id, rotation!.sealed!)).toEqual(second);

      await new SessionRepository(db).sweep(new Date(Date.now() + GRACE_MS + 1_000), 45 * DAY, 10_000);
      expect((await repo.findRotation(rotation!._id))?.sealed).toBeUndefined();
      await expect(replicaA.refresh(first.Sid, first.RefreshToken)).rejects.toMatchObject({
        code: 'RefreshTokenReused',
      });
    });
  });

  it('gives every one of concurrent refreshes with one token, on two replicas, the same single pair', async () => {
    const first = await signIn();
    const familyId = await familyOf(first);
    const answers = await Promise.allSettled(
      Array.from({ length: 8 }, (_, i) => (i % 2 ? replicaA : replicaB).refresh(first.Sid, first.RefreshToken)),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(8).fill('fulfilled'));
    const pairs = answers.map((a) => (a as PromiseFulfilledResult<IssuedPair>).value);
    expect(new Set(pairs.map((p) => JSON.stringify(p))).size).toBe(1);
    expect(await pairsOf(familyId)).toHaveLength(1);
    expect(await revokedAt(familyId)).toBeNull();
    expect(await replicaA.validate(first.Sid)).toBeNull();
    expect(await replicaA.validate(pairs[0]!.Sid)).not.toBeNull();
    expect(await replicaB.refresh(pairs[0]!.Sid, pairs[0]!.RefreshToken)).toEqual({
      Sid: expect.any(String),
      RefreshToken: expect.any(String),
    });
  });

  it('answers a refresh that lost the claim but cannot read it with 503 after a bounded wait, revoking nothing', async () => {
    // A repository on which the claim is always taken by someone else and never becomes readable.
    class LostClaim extends SessionRepository {
      override async claimRotation(): Promise<boolean> {
        return false;
      }
    }
    const loser = service(new LostClaim(db), { ...lifetimes, claimWaitMs: 300 });
    const first = await signIn();
    const startedAt = Date.now();
    const refused = await loser.refresh(first.Sid, first.RefreshToken).catch((e: unknown) => e);
    expect(refused).toMatchObject({ status: 503 });
    expect(Date.now() - startedAt).toBeLessThan(3_000);
    expect(await revokedAt(await familyOf(first))).toBeNull();
    expect(await replicaA.refresh(first.Sid, first.RefreshToken)).toEqual({
      Sid: expect.any(String),
      RefreshToken: expect.any(String),
    });
  });

  describe.each(['after-claim', 'between-pair-and-refresh-key', 'after-pair'] as const)(
    'a session-service dying mid-refresh (%s)',
    (at) => {
      it("lets the client's retry end with exactly one valid pair and no revocation", async () => {
        const first = await signIn();
        const familyId = await familyOf(first);
        await expect(
          service(new CrashingRepository(db, at)).refresh(first.Sid, first.RefreshToken),
        ).rejects.toBeInstanceOf(Killed);
        // The claim is the commit point: the old sid is dead from then on.
        expect(await replicaA.validate(first.Sid)).toBeNull();

        const retried = await replicaB.refresh(first.Sid, first.RefreshToken);
        const rotation = await repo.findRotation(tokenHash(first.RefreshToken)!);
        expect(rotation?.next?._id).toBe(tokenHash(retried.Sid)); // the pair the dying refresh had issued
        expect(await replicaA.refresh(first.Sid, first.RefreshToken)).toEqual(retried);
        const pairs = await pairsOf(familyId);
        expect(pairs.map((p) => p._id)).toEqual([tokenHash(retried.Sid)]);
        expect(await revokedAt(familyId)).toBeNull();
        expect(await replicaA.validate(retried.Sid)).toEqual({
          userId: first.userId,
          owners: first.owners,
          thumbprint: first.thumbprint,
        });
        await replicaA.refresh(retried.Sid, retried.RefreshToken);
        expect(await revokedAt(familyId)).toBeNull();
      });
    },
  );

  describe('maximum session lifetime', () => {
    const short = { ...lifetimes, maxLifetimeMs: 10 * DAY };

    it('caps the issued sid and refresh token at the end of the family, and refuses a refresh past it with SessionTooOld', async () => {
      const shortLived = service(repo, short);
      const user = registry.add();
      const first = await shortLived.create(user.userId, user.owners, user.thumbprint);
      const family = (await repo.findFamily(await familyOf(first)))!;
      const end = family.createdAt.getTime() + 10 * DAY;
      const firstDoc = (await repo.findPairBySid(tokenHash(first.Sid)!))!;
      expect(firstDoc.sidExpiresAt.getTime()).toBe(end);
      expect(firstDoc.refreshExpiresAt.getTime()).toBe(end);

      clock.offsetMs = 6 * DAY;
      const second = await shortLived.refresh(first.Sid, first.RefreshToken);
      const secondDoc = (await repo.findPairBySid(tokenHash(second.Sid)!))!;
      expect(secondDoc.sidExpiresAt.getTime()).toBe(end);
      expect(secondDoc.refreshExpiresAt.getTime()).toBe(end);

      clock.offsetMs = 10 * DAY + 1_000;
      expect(await shortLived.validate(second.Sid)).toBeNull();
      await expect(shortLived.refresh(second.Sid, second.RefreshToken)).rejects.toMatchObject({
        status: 403,
        code: 'SessionTooOld',
      });
    });

    it('applies to families signed in before a lower maximum was set', async () => {
      const first = await signIn(); // issued under 90 days: the refresh token lives 45
      clock.offsetMs = 11 * DAY;
      await expect(service(repo, short).refresh(first.Sid, first.RefreshToken)).rejects.toMatchObject({
        status: 403,
        code: 'SessionTooOld',
      });
      expect((await replicaA.refresh(first.Sid, first.RefreshToken)).Sid).toEqual(expect.any(String));
    });
  });

  describe('registration check', () => {
    it('refuses with CertificateRemoved and revokes the family once the certificate signed in with is removed', async () => {
      const first = await signIn();
      const familyId = await familyOf(first);
      const second = await replicaA.refresh(first.Sid, first.RefreshToken);
      expect(registry.asked.at(-1)).toEqual({ userId: first.userId, thumbprint: first.thumbprint });
      registry.certs.delete(first.thumbprint);
      await expect(replicaA.refresh(second.Sid, second.RefreshToken)).rejects.toMatchObject({
        status: 403,
        code: 'CertificateRemoved',
      });
      expect(await revokedAt(familyId)).toBeInstanceOf(Date);
      expect(await replicaB.validate(second.Sid)).toBeNull();
      await expect(replicaA.refresh(second.Sid, second.RefreshToken)).rejects.toMatchObject({
        status: 403,
        code: 'SessionRevoked',
      });
    });

    it('refuses with UserRemoved and revokes the family once the user is removed', async () => {
      const first = await signIn();
      registry.users.delete(first.userId);
      await expect(replicaA.refresh(first.Sid, first.RefreshToken)).rejects.toMatchObject({
        status: 403,
        code: 'UserRemoved',
      });
      expect(await revokedAt(await familyOf(first))).toBeInstanceOf(Date);
      expect(await replicaA.validate(first.Sid)).toBeNull();
    });

    it('checks a family from before thumbprints were kept by its user only', async () => {
      const user = registry.add();
      const first = await replicaA.create(user.userId, user.owners);
      registry.certs.delete(user.thumbprint);
      const second = await replicaA.refresh(first.Sid, first.RefreshToken);
      expect(registry.asked.at(-1)).toEqual({ userId: user.userId, thumbprint: undefined });
      registry.users.delete(user.userId);
      await expect(replicaA.refresh(second.Sid, second.RefreshToken)).rejects.toMatchObject({
        status: 403,
        code: 'UserRemoved',
      });
    });

    it('answers 503 and changes nothing while the auth-service does not answer; the pair refreshes once it does', async () => {
      const first = await signIn();
      registry.down = true;
      await expect(replicaA.refresh(first.Sid, first.RefreshToken)).rejects.toMatchObject({ status: 503 });
      expect(await repo.findRotation(tokenHash(first.RefreshToken)!)).toBeNull();
      expect(await replicaA.validate(first.Sid)).not.toBeNull();
      registry.down = false;
      const second = await replicaA.refresh(first.Sid, first.RefreshToken);
      expect(await replicaA.validate(second.Sid)).not.toBeNull();
      expect(await revokedAt(await familyOf(second))).toBeNull();
    });

    it('gives the new pair the owners the registry has now', async () => {
      const first = await signIn();
      const added = randomUUID();
      registry.users.set(first.userId, [...first.owners, added]);
      const second = await replicaA.refresh(first.Sid, first.RefreshToken);
      expect(await replicaA.validate(second.Sid)).toEqual({
        userId: first.userId,
        owners: [...first.owners, added],
        thumbprint: first.thumbprint,
      });
    });
  });
});
