import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { ServiceError } from '@cp/errors';
import type { Logger } from '@cp/logging';
import { RedisUnavailable } from '@cp/redis';
import { cachedAnswer, newToken, sameHash, tokenHash, type CachedSession, type SessionCache } from '@cp/session-cache';
import type { PairDoc, SessionRepository } from '../store/SessionRepository';
import type { Clock } from './Clock';

export interface SessionLifetimes {
  sidTtlMs: number;
  refreshTtlMs: number;
}

export interface IssuedPair {
  Sid: string;
  RefreshToken: string;
}

export interface ValidSession {
  userId: string;
  owners: string[];
}

/**
 * Sessions: create (for the auth-service), validate (for the content-service), and
 * refresh with rotation and reuse detection. MongoDB is the truth; Redis only caches sid lookups.
 */
export class SessionService {
  constructor(
    private readonly repo: SessionRepository,
    private readonly cache: SessionCache,
    private readonly clock: Clock,
    private readonly lifetimes: SessionLifetimes,
    private readonly logger: Logger,
  ) {}

  async create(userId: string, owners: string[]): Promise<IssuedPair> {
    const now = this.clock.now();
    const familyId = randomUUID();
    await this.repo.insertFamily({ _id: familyId, userId, owners, createdAt: now, revokedAt: null });
    return this.issuePair(familyId, userId, owners, now);
  }

  /** The session a sid stands for, or null when it is unknown, expired, rotated or revoked. */
  async validate(sid: string): Promise<ValidSession | null> {
    const sidHash = tokenHash(sid);
    if (!sidHash) return null;
    const now = this.clock.now().getTime();
    let cached: Awaited<ReturnType<SessionCache['get']>> | null = null;
    try {
      cached = await this.cache.get(sidHash);
    } catch (error) {
      if (!(error instanceof RedisUnavailable)) throw error;
      // Redis down: MongoDB answers, nothing is cached.
    }
    const answer = cached ? cachedAnswer(cached, now) : undefined;
    if (answer !== undefined) return answer;

    const startedAt = performance.now();
    const fresh = await this.lookup(sidHash, now);
    // Fill only after a plain miss, and only with an answer read just now: a fill that lands after
    // a tombstone expired must not bring back a session that was alive when it was read long ago.
    if (cached?.kind === 'miss' && performance.now() - startedAt < 2_000) {
      const fill = fresh.state === 'live' ? this.cache.fillLive(sidHash, fresh.session, now) : fresh.state === 'dead' ? this.cache.fillDead(sidHash) : null;
      await fill?.catch(() => undefined);
    }
    return fresh.state === 'live' && fresh.session.sidExpiresAt > now ? { userId: fresh.session.userId, owners: fresh.session.owners } : null;
  }

  private async lookup(sidHash: string, now: number): Promise<{ state: 'live'; session: CachedSession } | { state: 'dead' } | { state: 'unknown' }> {
    const pair = await this.repo.findPairBySid(sidHash);
    if (!pair) return { state: 'unknown' };
    if (pair.sidExpiresAt.getTime() <= now) return { state: 'dead' };
    const [rotation, family] = await Promise.all([this.repo.findRotation(pair.refreshHash), this.repo.findFamily(pair.familyId)]);
    if (rotation || !family || family.revokedAt) return { state: 'dead' };
    return { state: 'live', session: { userId: pair.userId, owners: pair.owners, familyId: pair.familyId, sidExpiresAt: pair.sidExpiresAt.getTime() } };
  }

  /**
   * Rotates the pair: exactly one of concurrent refreshes with one RefreshToken wins (an insert
   * claim keyed by its hash); the loser, and anyone presenting a used token later, revokes the
   * family. The old sid is marked in Redis before the claim, so that no replica serves it from
   * the cache once this returns; Redis not answering stops the refresh before anything changes.
   */
  async refresh(sid: string, refreshToken: string): Promise<IssuedPair> {
    const now = this.clock.now();
    const refreshHash = tokenHash(refreshToken);
    const sidHash = tokenHash(sid);
    if (!refreshHash) throw refused('InvalidRefreshToken', 'the refresh token is unknown');
    const [pair, rotation] = await Promise.all([this.repo.findPairByRefresh(refreshHash), this.repo.findRotation(refreshHash)]);
    if (rotation) {
      await this.revokeFamily(rotation.familyId, now);
      throw refused('RefreshTokenReused', 'the refresh token was used already; the session is revoked');
    }
    if (!pair) throw refused('InvalidRefreshToken', 'the refresh token is unknown');
    if (pair.refreshExpiresAt.getTime() <= now.getTime()) throw refused('RefreshTokenExpired', 'the refresh token has expired; sign in again');
    if (!sidHash || !sameHash(sidHash, pair._id)) throw refused('SidMismatch', 'the auth.sid does not belong to this refresh token');
    const family = await this.repo.findFamily(pair.familyId);
    if (!family || family.revokedAt) throw refused('SessionRevoked', 'the session was revoked; sign in again');

    await this.cache.bypass(pair._id).catch(redisDown);
    const claimed = await this.repo.claimRotation({ _id: refreshHash, familyId: pair.familyId, sidHash: pair._id, at: now, expiresAt: pair.refreshExpiresAt });
    if (!claimed) {
      await this.revokeFamily(pair.familyId, now);
      throw refused('RefreshTokenReused', 'the refresh token was used already; the session is revoked');
    }
    const issued = await this.issuePair(pair.familyId, pair.userId, pair.owners, now);
    await this.cache.tombstone(pair._id).catch((error: unknown) => this.logger.warn({ err: String(error) }, 'tombstone after rotation failed; the bypass mark stands'));
    await this.repo.deletePair(pair).catch((error: unknown) => this.logger.warn({ err: String(error) }, 'deleting a rotated pair failed; the sweeper will'));
    // A reuse elsewhere may have revoked the family while this rotation ran.
    const after = await this.repo.findFamily(pair.familyId);
    if (!after || after.revokedAt) {
      await this.revokeFamily(pair.familyId, now);
      throw refused('SessionRevoked', 'the session was revoked; sign in again');
    }
    return issued;
  }

  /** Revokes a whole family (RFC 9700 §4.14): MongoDB first, then tombstones for every sid of it. */
  /** Revokes every session (sign-in) of a user; returns how many there were. */
  async revokeUser(userId: string): Promise<number> {
    const families = await this.repo.liveFamiliesOfUser(userId);
    const now = this.clock.now();
    for (const familyId of families) await this.revokeFamily(familyId, now);
    return families.length;
  }

  async revokeFamily(familyId: string, now: Date): Promise<void> {
    await this.repo.revokeFamily(familyId, now);
    const sidHashes = await this.repo.sidHashesOfFamily(familyId);
    try {
      await Promise.all(sidHashes.map((h) => this.cache.tombstone(h)));
    } catch (error) {
      // Cached entries live at most CACHE_TTL_SECONDS; MongoDB already says revoked.
      this.logger.error({ err: String(error), familyId }, 'revoked a session family but could not tombstone its cached sids');
    }
  }

  private async issuePair(familyId: string, userId: string, owners: string[], now: Date): Promise<IssuedPair> {
    const Sid = newToken();
    const RefreshToken = newToken();
    const doc: PairDoc = {
      _id: tokenHash(Sid)!,
      refreshHash: tokenHash(RefreshToken)!,
      familyId,
      userId,
      owners,
      sidExpiresAt: new Date(now.getTime() + this.lifetimes.sidTtlMs),
      refreshExpiresAt: new Date(now.getTime() + this.lifetimes.refreshTtlMs),
      createdAt: now,
    };
    await this.repo.insertPair(doc);
    return { Sid, RefreshToken };
  }
}

function refused(code: string, message: string): ServiceError {
  return ServiceError.forbidden(code, message);
}

function redisDown(error: unknown): never {
  throw ServiceError.unavailable('ServiceUnavailable', 'the session cache does not answer; retry later', error);
}
