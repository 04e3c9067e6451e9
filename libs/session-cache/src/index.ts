// The session tokens' stored form and the Redis cache of sid lookups: written by the
// session-service, read by it and by the content-service (which asks the session-service only
// when the cache cannot answer).
export { cachedAnswer, SessionCache, type CachedSession, type CacheLookup } from './SessionCache';
export { newToken, sameHash, tokenHash } from './tokens';
