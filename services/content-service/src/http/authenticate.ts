import type { RequestHandler } from 'express';
import { type BearerVerifier, InvalidBearerToken } from './BearerVerifier';
import { parseAuthorization } from './parseAuthorization';
import type { Principal } from './Principal';
import { ServiceError } from '@cp/errors';
import { performance } from 'node:perf_hooks';
import { timingsOf } from '../uploads/UploadMetrics';

/** Validates an `auth.sid` with the session-service; null when the session is unknown or over. */
export interface SessionValidator {
  validate(sid: string): Promise<Principal | null>;
}

declare module 'http' {
  interface IncomingMessage {
    principal?: Principal;
  }
}

const SID_SHAPE = /^[0-9A-Fa-f]{64}$/;

/** Resolves the request's credential (Bearer JWT, or auth.sid from header or cookie) to a Principal. */
export function authenticate(bearer: BearerVerifier | null, sessions: SessionValidator | null): RequestHandler {
  return async (req, res, next) => {
    const startedAt = performance.now();
    const presented = parseAuthorization(req.headers.authorization, req.headers.cookie);
    switch (presented.scheme) {
      case 'none':
        throw ServiceError.of('missingCredentials');
      case 'malformed':
        throw ServiceError.of('malformedCredentials', presented.reason);
      case 'bearer': {
        if (!bearer) throw ServiceError.of('bearerNotAccepted');
        try {
          req.principal = await bearer.verify(presented.token);
        } catch (error) {
          if (error instanceof InvalidBearerToken) throw ServiceError.of('invalidToken', error.message);
          throw ServiceError.of('identityProviderUnavailable', undefined, { cause: error });
        }
        break;
      }
      case 'auth.sid': {
        if (!sessions) throw ServiceError.of('sessionsNotAccepted');
        // A sid is 64 hex characters: anything else is refused here rather than sent on to the
        // session-service (where an oversized one failed its body limit and came back as 503).
        if (!SID_SHAPE.test(presented.sid)) throw ServiceError.of('invalidSession');
        const principal = await sessions.validate(presented.sid);
        if (!principal) throw ServiceError.of('invalidSession');
        req.principal = principal;
        break;
      }
    }
    timingsOf(res).add('auth', performance.now() - startedAt);
    next();
  };
}
