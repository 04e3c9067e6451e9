import { performance } from 'node:perf_hooks';
import { RedisUnavailable } from '@cp/redis';
import { cachedAnswer, tokenHash, type CachedSession, type CacheLookup, type SessionCache } from '@cp/session-cache';
import type { Clock } from '@cp/service-kit';
import type { FamilyDoc, PairDoc, SessionRepository } from '../store/SessionRepository';

export interface ValidSession {
  userId: string;
  owners: string[];
  thumbprint?: string; // the sign-in certificate's SHA-1 (hex), where it was signed in by one
}

/** What the cache holds for a pair of a family. */
export function cachedSession(
  pair: Pick<PairDoc, 'userId' | 'owners' | 'sidExpiresAt'>,
  family: Pick<FamilyDoc, '_id' | 'thumbprint'>,
): CachedSession {
  return {
    userId: pair.userId,
    owners: pair.owners,
    familyId: family._id,
    sidExpiresAt: pair.sidExpiresAt.getTime(),
    ...(family.thumbprint ? { thumbprint: family.thumbprint } : {}),
  };
}

/**
 * Sid lookups: the Redis cache first (where the session-service holds every pair it writes for
 * the life of its sid), MongoDB on a miss, a rotation under way or Redis not answering: one read
 * of the pair by `_id`, plus its rotation claim once a rotation of it began.
 */
export class SidLookups {
  constructor(
    private readonly repo: SessionRepository,
    private readonly cache: SessionCache,
    private readonly clock: Clock,
  ) {}

  /** The session a sid stands for, or null when it is unknown, expired, rotated or revoked. */
  async validate(sid: string): Promise<ValidSession | null> {
    const sidHash = tokenHash(sid);
    if (!sidHash) return null;
    const now = this.clock().getTime();
    let cached: CacheLookup | null = null;
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
      if (fresh.state === 'live') await this.cache.fillLive(sidHash, fresh.session, now).catch(() => undefined);
      else if (fresh.state === 'dead') await this.cache.fillDead(sidHash).catch(() => undefined);
    }
    return fresh.state === 'live' ? (cachedAnswer({ kind: 'live', session: fresh.session }, now) ?? null) : null;
  }

  private async lookup(
    sidHash: string,
    now: number,
  ): Promise<{ state: 'live'; session: CachedSession } | { state: 'dead' } | { state: 'unknown' }> {
    const pair = await this.repo.findPairBySid(sidHash);
    if (!pair) return { state: 'unknown' };
    if (pair.sidExpiresAt.getTime() <= now) return { state: 'dead' };
    if (pair.carriesFamily) {
      // One read answers: the pair carries its family's revocation and thumbprint, and says when
      // a rotation of it may have been claimed.
      if (pair.revokedAt) return { state: 'dead' };
      if (pair.rotating && (await this.repo.findRotation(pair.refreshHash))) return { state: 'dead' };
      return { state: 'live', session: cachedSession(pair, { _id: pair.familyId, thumbprint: pair.thumbprint }) };
    }
    // A pair written before pairs carried their family: its family and rotation claim answer.
    const [rotation, family] = await Promise.all([
      this.repo.findRotation(pair.refreshHash),
      this.repo.findFamily(pair.familyId),
    ]);
    if (rotation || !family || family.revokedAt) return { state: 'dead' };
    return { state: 'live', session: cachedSession(pair, family) };
  }
}
