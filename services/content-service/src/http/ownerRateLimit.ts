import type { RequestHandler } from 'express';
import { ServiceError } from '@cp/errors';
import type { RequestRateLimiter } from '@cp/rate-limit';

const OWNER = /^\/([^/]+)\/contents(?:\/|$)/;

/**
 * Limits /v1 requests per owner (RATE_LIMIT_PER_OWNER_*), counted in Redis across replicas (in
 * memory while Redis fails): over it, 429 `tooManyRequests` with Retry-After. Runs after
 * authentication and counts only requests the caller may make for that owner, so that nobody
 * can spend another owner's allowance.
 */
export function ownerRateLimit(limiter: RequestRateLimiter): RequestHandler {
  return (req, _res, next) => {
    const owner = OWNER.exec(req.path)?.[1]?.toLowerCase();
    if (!owner || !req.principal?.owners.includes(owner)) return next();
    limiter.check(owner, '').then((waitMs) => {
      if (waitMs === 0) return next();
      const seconds = Math.max(1, Math.ceil(waitMs / 1000));
      next(
        ServiceError.of('tooManyRequests', `too many requests for owner ${owner}; retry in ${seconds} s`, {
          headers: { 'Retry-After': String(seconds) },
        }),
      );
    }, next);
  };
}
