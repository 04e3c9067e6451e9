import { Counter, Registry } from 'prom-client';
import type { Principal } from './Principal';
import { RedisUnavailable } from '@cp/redis';
import { systemClock, type Clock } from '@cp/service-kit';
import { cachedAnswer, tokenHash, type SessionCache } from '@cp/session-cache';
import type { SessionValidator } from './authenticate';

/**
 * Answers an auth.sid from the session-service's Redis cache of sid lookups when it can, which
 * saves a request to the session-service on every content request. The cache holds only what the
 * session-service put there: a live session (whose expiry is checked here too) or a tombstone of a
 * rotated, revoked or expired sid. A miss, a rotation under way, or Redis not answering goes to
 * the session-service, which reads MongoDB and fills the cache.
 */
export class CachedSessionValidator implements SessionValidator {
  /** Who answered each auth.sid: `cache` (live or tombstone) or `session-service`. */
  private readonly answered: Counter<'by'>;

  constructor(
    private readonly cache: SessionCache,
    private readonly sessionService: SessionValidator,
    private readonly clock: Clock = systemClock,
    registry: Registry = new Registry(),
  ) {
    this.answered = new Counter({
      name: 'content_sid_checks_total',
      help: 'auth.sid checks, by who answered: cache or session-service',
      labelNames: ['by'],
      registers: [registry],
    });
  }

  async validate(sid: string): Promise<Principal | null> {
    const sidHash = tokenHash(sid);
    if (!sidHash) return null; // not a token at all: nothing could match it
    let cached: Awaited<ReturnType<SessionCache['get']>>;
    try {
      cached = await this.cache.get(sidHash);
    } catch (error) {
      if (!(error instanceof RedisUnavailable)) throw error;
      return this.askSessionService(sid);
    }
    const answer = cachedAnswer(cached, this.clock().getTime());
    if (answer === undefined) return this.askSessionService(sid);
    this.answered.inc({ by: 'cache' });
    return (
      answer && {
        kind: 'session',
        subject: answer.userId,
        owners: answer.owners.map((o) => o.toLowerCase()),
        ...(answer.thumbprint ? { thumbprint: answer.thumbprint } : {}),
      }
    );
  }

  private askSessionService(sid: string): Promise<Principal | null> {
    this.answered.inc({ by: 'session-service' });
    return this.sessionService.validate(sid);
  }
}
