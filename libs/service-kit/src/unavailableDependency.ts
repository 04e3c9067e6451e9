/** A backing server that did not answer, as an error tells it. */
export type Dependency = 'database' | 'cache' | 'storage';

// By class name (the error's class or any it extends, so MongoNetworkTimeoutError counts as a
// MongoNetworkError): service-kit then needs neither the MongoDB driver nor @cp/redis.
// The driver's own deadlines (an operation timeout, a full connection pool) count too: MongoDB is
// too slow to serve now.
const DATABASE = new Set([
  'MongoServerSelectionError',
  'MongoNetworkError',
  'MongoNotConnectedError',
  'MongoOperationTimeoutError',
  'MongoWaitQueueTimeoutError',
]);
const CACHE = new Set(['RedisUnavailable']);

function classNames(error: object): string[] {
  const names: string[] = [];
  for (
    let proto = Object.getPrototypeOf(error) as object | null;
    proto && proto !== Error.prototype;
    proto = Object.getPrototypeOf(proto) as object | null
  ) {
    const ctor = (proto as { constructor?: { name?: unknown } }).constructor;
    if (typeof ctor?.name === 'string') names.push(ctor.name);
  }
  return names;
}

/**
 * Which backing server an error says is unreachable: MongoDB (server selection, network, not
 * connected), Redis (`RedisUnavailable` of @cp/redis), or S3 when the caller says how to tell.
 * Null for anything else. The one mapper behind every service's 503 with Retry-After.
 */
export function unavailableDependency(
  error: unknown,
  isStorageUnavailable?: (error: unknown) => boolean,
): Dependency | null {
  if (typeof error !== 'object' || error === null) return null;
  const names = classNames(error);
  if (names.some((n) => DATABASE.has(n))) return 'database';
  if (names.some((n) => CACHE.has(n))) return 'cache';
  if (isStorageUnavailable?.(error)) return 'storage';
  return null;
}
