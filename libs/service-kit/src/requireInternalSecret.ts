import { createHash, timingSafeEqual } from 'node:crypto';
import type { RequestHandler } from 'express';
import { ServiceError } from '@cp/errors';

export const INTERNAL_SECRET_HEADER = 'x-internal-secret';

/** Guards /internal/*: only callers holding the shared secret (the other services) get through. */
export function requireInternalSecret(secret: string): RequestHandler {
  const expected = createHash('sha256').update(secret).digest();
  return (req, _res, next) => {
    const given = req.headers[INTERNAL_SECRET_HEADER];
    const digest = createHash('sha256').update(typeof given === 'string' ? given : '').digest();
    if (typeof given !== 'string' || !timingSafeEqual(digest, expected)) {
      next(ServiceError.unauthorized('InternalSecretRequired', 'internal endpoint: the shared secret is missing or wrong'));
      return;
    }
    next();
  };
}
