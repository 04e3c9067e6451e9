import { redisCall, type Redis } from '@cp/redis';

/** What a live sid resolves to, as cached. */
export interface CachedSession {
  userId: string;
  owners: string[];
  familyId: string;
  sidExpiresAt: number; // epoch ms
  /** The sign-in certificate's SHA-1 thumbprint (hex), for sessions signed in by certificate. */
  thumbprint?: string;
}

export type CacheLookup =
  | { kind: 'miss' }
  | { kind: 'live'; session: CachedSession }
  | { kind: 'dead' } // tombstone: rotated, revoked or expired
  | { kind: 'bypass' }; // a rotation is under way: read MongoDB, do not fill

/**
 * What a cache lookup says about a sid at `now`: its session, null (tombstoned, or expired since
 * it was cached), or undefined when the cache cannot tell (a miss, a rotation under way) and
 * MongoDB must answer.
 */
export function cachedAnswer(
  lookup: CacheLookup,
  now: number,
): { userId: string; owners: string[]; thumbprint?: string } | null | undefined {
  if (lookup.kind === 'dead') return null;
  if (lookup.kind !== 'live') return undefined;
  const { userId, owners, thumbprint, sidExpiresAt } = lookup.session;
  return sidExpiresAt > now ? { userId, owners, ...(thumbprint ? { thumbprint } : {}) } : null;
}

const DEAD = 'dead';
const BYPASS = 'bypass';

/**
 * Redis cache of sid lookups (key `sess:<sidHash>`). Fills use SET NX so that a reader holding an
 * old answer from MongoDB can never overwrite a tombstone written by a rotation or revocation;
 * tombstones use a plain SET so they overwrite any fill. Every method throws RedisUnavailable when
 * Redis does not answer.
 *
 * Two kinds of fill: a reader's, from a MongoDB read that may be stale by the time it lands, lives
 * `ttlSeconds` (short); the session-service's own, right after it wrote a new pair (`hold`), lives
 * as long as the sid, so that a sid used after any idle time is still answered without MongoDB. A
 * revocation's tombstone lives `revokedSeconds` (the longest a sid lives), so no late fill of any
 * kind can bring a revoked sid back; a rotation's may be short, since the pair it ends is never
 * filled by a writer again and a miss reads MongoDB, which knows it rotated.
 */
export class SessionCache {
  constructor(
    private readonly redis: Redis,
    /** Longest life of a reader's fill, a bypass mark or a rotation's tombstone (readers that never write can leave the default). */
    private readonly ttlSeconds = 60,
    /** Life of a revocation's tombstone: at least the longest a sid lives. */
    private readonly revokedSeconds = ttlSeconds,
  ) {}

  async get(sidHash: string): Promise<CacheLookup> {
    const raw = await redisCall(this.redis, (r) => r.get(key(sidHash)));
    if (raw === null) return { kind: 'miss' };
    if (raw === DEAD) return { kind: 'dead' };
    if (raw === BYPASS) return { kind: 'bypass' };
    try {
      return { kind: 'live', session: JSON.parse(raw) as CachedSession };
    } catch {
      return { kind: 'bypass' };
    }
  }

  /** Caches a live session unless something (a tombstone, another fill) is there already. */
  async fillLive(sidHash: string, session: CachedSession, now: number): Promise<void> {
    await this.putLive(sidHash, session, Math.min(this.ttlSeconds, secondsLeft(session, now)));
  }

  /**
   * Caches a pair the session-service has just written (a sign-in, a rotation's new pair) until
   * its sid expires; a tombstone already there (a revocation that overtook it) stays.
   */
  async hold(sidHash: string, session: CachedSession, now: number): Promise<void> {
    await this.putLive(sidHash, session, secondsLeft(session, now));
  }

  /** SET NX for `seconds` (none below one): a fill never overwrites a tombstone, a bypass mark or another fill. */
  private async putLive(sidHash: string, session: CachedSession, seconds: number): Promise<void> {
    if (seconds < 1) return;
    await redisCall(this.redis, (r) =>
      r.set(key(sidHash), JSON.stringify(session), { expiration: { type: 'EX', value: seconds }, condition: 'NX' }),
    );
  }

  async fillDead(sidHash: string): Promise<void> {
    await redisCall(this.redis, (r) =>
      r.set(key(sidHash), DEAD, { expiration: { type: 'EX', value: this.ttlSeconds }, condition: 'NX' }),
    );
  }

  /** Before a rotation commits: readers of this sid go to MongoDB until the tombstone lands. */
  async bypass(sidHash: string): Promise<void> {
    await redisCall(this.redis, (r) =>
      r.set(key(sidHash), BYPASS, { expiration: { type: 'EX', value: this.ttlSeconds } }),
    );
  }

  /** The sid's pair was rotated: readers answer it dead, then (once this expires) read MongoDB, which says so too. */
  async tombstone(sidHash: string): Promise<void> {
    await redisCall(this.redis, (r) =>
      r.set(key(sidHash), DEAD, { expiration: { type: 'EX', value: this.ttlSeconds } }),
    );
  }

  /** The sid's family was revoked: dead for as long as the sid could have lived, whatever fill comes late. */
  async revoked(sidHash: string): Promise<void> {
    await redisCall(this.redis, (r) =>
      r.set(key(sidHash), DEAD, { expiration: { type: 'EX', value: this.revokedSeconds } }),
    );
  }
}

const key = (sidHash: string): string => `sess:${sidHash}`;
const secondsLeft = (session: CachedSession, now: number): number => Math.floor((session.sidExpiresAt - now) / 1000);
