import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { ServiceError } from '@cp/errors';
import type { Logger } from '@cp/logging';
import { newToken, sameHash, tokenHash, type SessionCache } from '@cp/session-cache';
import type { RegistrationChecker } from '@cp/registry';
import type { FamilyDoc, NextPair, PairDoc, RotationDoc, SessionRepository } from '../store/SessionRepository';
import type { Clock } from '@cp/service-kit';
import { openPair, sealPair } from './SealedPair';
import { cachedSession, SidLookups, type ValidSession } from './SidLookups';

export interface SessionLifetimes {
  sidTtlMs: number;
  refreshTtlMs: number;
  /** No refresh past this long after the sign-in; no sid or refresh token outlives it (default 90 days). */
  maxLifetimeMs?: number;
  /** How long a retry with a just-rotated refresh token gets the same pair back (default 30 s). */
  graceMs?: number;
  /** How long a refresh that lost the claim to a concurrent one waits to read it (default 3 s). */
  claimWaitMs?: number;
}

export interface IssuedPair {
  Sid: string;
  RefreshToken: string;
}

/** Learns whose session a refresh is about, as soon as that is known (for the audit trail). */
type OnUser = (userId: string, thumbprint: string | undefined) => void;

/**
 * Sessions: create (for the auth-service), validate (for the content-service), and
 * refresh with rotation and reuse detection. MongoDB is the truth; Redis only caches sid lookups.
 */
export class SessionService {
  private readonly maxLifetimeMs: number;
  private readonly graceMs: number;
  private readonly claimWaitMs: number;
  private readonly lookups: SidLookups;

  constructor(
    private readonly repo: SessionRepository,
    private readonly cache: SessionCache,
    private readonly clock: Clock,
    private readonly lifetimes: SessionLifetimes,
    private readonly logger: Logger,
    private readonly registrations: RegistrationChecker,
  ) {
    this.maxLifetimeMs = lifetimes.maxLifetimeMs ?? 90 * 24 * 3600 * 1000;
    this.graceMs = lifetimes.graceMs ?? 30_000;
    this.claimWaitMs = lifetimes.claimWaitMs ?? 3_000;
    this.lookups = new SidLookups(repo, cache, clock);
  }

  /** A new sign-in; `thumbprint` is the certificate's, checked again on every refresh. */
  async create(userId: string, owners: string[], thumbprint?: string): Promise<IssuedPair> {
    const now = this.clock();
    const family: FamilyDoc = {
      _id: randomUUID(),
      userId,
      owners,
      ...(thumbprint ? { thumbprint: thumbprint.toUpperCase() } : {}),
      createdAt: now,
      revokedAt: null,
    };
    await this.repo.insertFamily(family);
    const issued: IssuedPair = { Sid: newToken(), RefreshToken: newToken() };
    const pair = this.pairFor(issued, family, owners, now);
    await this.repo.insertPair({ ...pair, familyId: family._id });
    await this.hold(pair, family);
    return issued;
  }

  /**
   * Caches a pair just written for as long as its sid lives, so that its lookups never need
   * MongoDB (whose cost, on a server without indexes, grows with the sessions it holds). Failing
   * changes nothing but speed: a miss reads MongoDB.
   */
  private async hold(pair: NextPair, family: Pick<FamilyDoc, '_id' | 'thumbprint'>): Promise<void> {
    await this.cache
      .hold(pair._id, cachedSession(pair, family), this.clock().getTime())
      .catch((error: unknown) =>
        this.logger.warn({ err: String(error) }, 'could not cache a new session; its lookups read MongoDB'),
      );
  }

  /** The session a sid stands for, or null when it is unknown, expired, rotated or revoked. */
  validate(sid: string): Promise<ValidSession | null> {
    return this.lookups.validate(sid);
  }

  /**
   * Rotates the pair. The new pair is made first and sealed into the rotation claim (an insert
   * keyed by the used token's hash), so that one insert both decides the winner among concurrent
   * refreshes and records what was issued. Whoever then presents the same token and sid within
   * the grace window (a retry after a lost answer, a concurrent loser, a retry after a crash
   * between the claim and the pair's insert) finishes the same rotation and gets the same pair;
   * outside the window, or with another sid, it is a reuse and the family is revoked. The old
   * sid is marked in Redis before the claim, so that no replica serves it from the cache once
   * this returns; Redis or the auth-service not answering stops the refresh before anything
   * changes. docs/design.md (Sessions and rnd) gives each step's crash behaviour.
   */
  async refresh(sid: string, refreshToken: string, onUser?: OnUser): Promise<IssuedPair> {
    const now = this.clock();
    const refreshHash = tokenHash(refreshToken);
    const sidHash = tokenHash(sid);
    if (!refreshHash) throw ServiceError.of('InvalidRefreshToken');
    // The sid's pair, read by `_id`, answers a refresh with its own token in one read.
    const [bySid, rotation] = await Promise.all([
      sidHash ? this.repo.findPairBySid(sidHash) : null,
      this.repo.findRotation(refreshHash),
    ]);
    if (rotation) return this.replay(rotation, refreshToken, sidHash);
    const pair = bySid && sameHash(bySid.refreshHash, refreshHash) ? bySid : null;
    if (!pair) return this.notThisSids(refreshHash, refreshToken, sidHash);
    onUser?.(pair.userId, undefined);
    const family = await this.familyOf(pair);
    if (!family || family.revokedAt) throw ServiceError.of('SessionRevoked');
    onUser?.(family.userId, family.thumbprint);
    const endsAt = this.endOf(family);
    if (endsAt.getTime() <= now.getTime()) throw ServiceError.of('SessionTooOld');
    if (pair.refreshExpiresAt.getTime() <= now.getTime()) throw ServiceError.of('RefreshTokenExpired');

    const registration = await this.registrations.check(family.userId, family.thumbprint);
    if (!registration.registered) {
      await this.revokeFamily(family._id, now);
      throw registration.reason === 'UserRemoved'
        ? ServiceError.of('UserRemoved')
        : ServiceError.of('CertificateRemoved');
    }

    await this.cache.bypass(pair._id).catch(redisDown);
    // From here a lookup of this pair in MongoDB reads the rotation claim too.
    await this.repo.markRotating(pair._id);
    const issued: IssuedPair = { Sid: newToken(), RefreshToken: newToken() };
    const claim: RotationDoc = {
      _id: refreshHash,
      familyId: pair.familyId,
      sidHash: pair._id,
      at: now,
      expiresAt: pair.refreshExpiresAt,
      next: this.pairFor(
        issued,
        family,
        registration.owners.map((o) => o.toLowerCase()),
        now,
      ),
      sealed: sealPair(refreshToken, refreshHash, issued),
      graceUntil: new Date(now.getTime() + this.graceMs),
    };
    if (await this.repo.claimRotation(claim)) return this.finish(claim, issued);
    // Another refresh with this token claimed first: its pair is in its claim.
    return this.replay(await this.claimOf(refreshHash), refreshToken, sidHash);
  }

  /**
   * A refresh token that is not the one of the sid's pair: another pair's (the sid does not go
   * with it), one rotated while the first reads ran (its claim is there now), or none.
   */
  private async notThisSids(refreshHash: string, refreshToken: string, sidHash: string | null): Promise<IssuedPair> {
    const [pair, rotation] = await Promise.all([
      this.repo.findPairByRefresh(refreshHash),
      this.repo.findRotation(refreshHash),
    ]);
    if (rotation) return this.replay(rotation, refreshToken, sidHash);
    if (!pair) throw ServiceError.of('InvalidRefreshToken');
    throw ServiceError.of('SidMismatch');
  }

  /**
   * The pair's family: from the pair itself when it carries what a refresh needs of it (its sign-in
   * time, thumbprint and revocation), else read. A revocation that marked the family but not yet
   * this pair is caught after the claim, where the family is read before the new pair is held.
   */
  private async familyOf(pair: PairDoc): Promise<FamilyDoc | null> {
    if (!pair.carriesFamily || !pair.familyCreatedAt) return this.repo.findFamily(pair.familyId);
    return {
      _id: pair.familyId,
      userId: pair.userId,
      owners: pair.owners,
      ...(pair.thumbprint ? { thumbprint: pair.thumbprint } : {}),
      createdAt: pair.familyCreatedAt,
      revokedAt: pair.revokedAt ?? null,
    };
  }

  /**
   * A token that was rotated already. Within the grace window, with the sid it was issued with,
   * and while the pair issued for it is unused, the same pair again (finishing its rotation if
   * that was cut short); otherwise a reuse: the family is revoked (RFC 9700 §4.14).
   */
  private async replay(rotation: RotationDoc, refreshToken: string, sidHash: string | null): Promise<IssuedPair> {
    const now = this.clock();
    const inGrace =
      rotation.sealed !== undefined &&
      rotation.next !== undefined &&
      rotation.graceUntil !== undefined &&
      rotation.graceUntil.getTime() > now.getTime();
    const issued =
      inGrace && sidHash && sameHash(sidHash, rotation.sidHash)
        ? openPair(refreshToken, rotation._id, rotation.sealed!)
        : null;
    // The successor already rotated: whoever retries the old token now is not the one who got it.
    if (!issued || (await this.repo.findRotation(rotation.next!.refreshHash))) {
      await this.revokeFamily(rotation.familyId, now);
      throw ServiceError.of('RefreshTokenReused');
    }
    const family = await this.repo.findFamily(rotation.familyId);
    if (!family || family.revokedAt) throw ServiceError.of('SessionRevoked');
    return this.finish(rotation, issued);
  }

  /**
   * The steps after the claim, each idempotent so that any refresh holding the claim's token can
   * run them again: write the new pair, tombstone the old sid, delete the old pair.
   */
  private async finish(rotation: RotationDoc, issued: IssuedPair): Promise<IssuedPair> {
    await this.repo.ensurePair({ ...rotation.next!, familyId: rotation.familyId });
    await this.cache
      .tombstone(rotation.sidHash)
      .catch((error: unknown) =>
        this.logger.warn({ err: String(error) }, 'tombstone after rotation failed; the bypass mark stands'),
      );
    await this.repo
      .deletePair(rotation.sidHash)
      .catch((error: unknown) =>
        this.logger.warn({ err: String(error) }, 'deleting a rotated pair failed; the sweeper will'),
      );
    // A reuse elsewhere may have revoked the family while this rotation ran.
    const after = await this.repo.findFamily(rotation.familyId);
    if (!after || after.revokedAt) {
      await this.revokeFamily(rotation.familyId, this.clock());
      throw ServiceError.of('SessionRevoked');
    }
    // Held only now: a revocation from here on finds the new pair and overwrites this, or was first and its tombstone stays.
    await this.hold(rotation.next!, after);
    return issued;
  }

  /** The claim a concurrent refresh inserted; waited for a bounded while, then 503 (nothing revoked). */
  private async claimOf(refreshHash: string): Promise<RotationDoc> {
    const deadline = performance.now() + this.claimWaitMs;
    for (;;) {
      const rotation = await this.repo.findRotation(refreshHash);
      if (rotation) return rotation;
      if (performance.now() >= deadline)
        throw ServiceError.of('ServiceUnavailable', 'another refresh with this token is under way; retry', {
          retryAfterSeconds: 1,
        });
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** When a family stops being refreshable: its sign-in plus the maximum session lifetime. */
  private endOf(family: Pick<FamilyDoc, 'createdAt'>): Date {
    return new Date(family.createdAt.getTime() + this.maxLifetimeMs);
  }

  /** Revokes every session (sign-in) of a user; returns how many there were. */
  async revokeUser(userId: string): Promise<number> {
    const families = await this.repo.liveFamiliesOfUser(userId);
    const now = this.clock();
    for (const familyId of families) await this.revokeFamily(familyId, now);
    return families.length;
  }

  /**
   * Revokes a whole family (RFC 9700 §4.14). A cached sid may live as long as the sid itself, so
   * the cache is told first: every sid of the family tombstoned (Redis not answering: 503, nothing
   * revoked) and its pair marked revoked, then the family in MongoDB, then the sids again, for a
   * pair a rotation wrote in between. A 503 after MongoDB said revoked asks for the revocation
   * again (it is idempotent).
   */
  async revokeFamily(familyId: string, now: Date): Promise<void> {
    await this.tombstoneFamily(familyId, now);
    await this.repo.revokeFamily(familyId, now);
    await this.tombstoneFamily(familyId, now);
  }

  /**
   * Tombstones again every sid of the families revoked within a sid's life (at most `limit`, the
   * latest first), and marks their pairs again: a tombstone Redis lost (a restart that lost its
   * last writes, a failover, a restored backup), or a revocation cut short between the family's
   * mark and its pairs', cannot leave a revoked sid answered past the next sweep.
   */
  async reassertRevocations(limit = 1000): Promise<number> {
    const now = this.clock();
    const since = new Date(now.getTime() - this.lifetimes.sidTtlMs);
    const families = await this.repo.familiesRevokedSince(since, limit);
    for (const familyId of families) await this.tombstoneFamily(familyId, now);
    return families.length;
  }

  /** Every sid of the family tombstoned in Redis (else 503), then every pair marked revoked in MongoDB. */
  private async tombstoneFamily(familyId: string, at: Date): Promise<void> {
    const sidHashes = await this.repo.sidHashesOfFamily(familyId);
    await Promise.all(sidHashes.map((h) => this.cache.revoked(h))).catch(redisDown);
    await this.repo.markPairsRevoked(sidHashes, at);
  }

  /**
   * The stored form of a new pair, with what a lookup needs of its family; neither expiry goes
   * past the family's end.
   */
  private pairFor(
    issued: IssuedPair,
    family: Pick<FamilyDoc, 'userId' | 'thumbprint' | 'createdAt'>,
    owners: string[],
    now: Date,
  ): NextPair {
    const end = this.endOf(family).getTime();
    return {
      _id: tokenHash(issued.Sid)!,
      refreshHash: tokenHash(issued.RefreshToken)!,
      userId: family.userId,
      owners,
      sidExpiresAt: new Date(Math.min(now.getTime() + this.lifetimes.sidTtlMs, end)),
      refreshExpiresAt: new Date(Math.min(now.getTime() + this.lifetimes.refreshTtlMs, end)),
      createdAt: now,
      carriesFamily: true,
      familyCreatedAt: family.createdAt,
      ...(family.thumbprint ? { thumbprint: family.thumbprint } : {}),
    };
  }
}

function redisDown(error: unknown): never {
  throw ServiceError.of('ServiceUnavailable', 'the session cache does not answer; retry later', { cause: error });
}
