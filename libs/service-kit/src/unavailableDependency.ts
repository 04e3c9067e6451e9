import { hasErrorCode } from '@cp/errors';

/** A backing server that did not answer, as an error tells it. */
export type Dependency = 'database' | 'cache' | 'storage';

/** How a service tells the failures of the backing servers it talks to through its own drivers. */
export interface OwnedDependencies {
  /** MongoDB: `mongoUnavailable` of the driver the service loaded. */
  database?: (error: unknown) => boolean;
  /** S3. */
  storage?: (error: unknown) => boolean;
}

/**
 * Which backing server an error says is unreachable: Redis by the code of @cp/redis's
 * RedisUnavailable (`CP_ERR_REDIS_UNAVAILABLE`), MongoDB and S3 as the caller says how to tell.
 * Null for anything else. The one mapper behind every service's 503 with Retry-After.
 */
export function unavailableDependency(error: unknown, owned: OwnedDependencies = {}): Dependency | null {
  if (owned.database?.(error)) return 'database';
  if (hasErrorCode(error, 'CP_ERR_REDIS_UNAVAILABLE')) return 'cache';
  if (owned.storage?.(error)) return 'storage';
  return null;
}
