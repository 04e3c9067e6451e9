import { createHash, timingSafeEqual } from 'node:crypto';
import type { RequestHandler } from 'express';
import { ServiceError } from '@cp/errors';

export const INTERNAL_SECRET_HEADER = 'x-internal-secret';

/** One service allowed to call /internal/*: the secret it sends and the route prefixes granted to it. */
export interface InternalCaller {
  /** Who it is (`auth-service`); only for error messages, never the secret. */
  name: string;
  secret: string;
  /**
   * Paths under the mount point (`/sessions/validate`), each granting itself and what lies below
   * it (`/registrations` grants `/registrations/check`), never a mere string prefix
   * (`/sessions` does not grant `/sessionsx`).
   */
  routes: string[];
}

/**
 * Guards /internal/*: the secret in `x-internal-secret` says which caller it is (401 when it is
 * nobody's), and that caller reaches only the routes granted to it (403 otherwise). Every caller
 * has its own secret, so holding one service's secret does not open another's routes.
 */
export function requireInternalSecret(callers: InternalCaller[]): RequestHandler {
  const known = callers.map((c) => ({ ...c, digest: digestOf(c.secret), routes: c.routes.map(normalise) }));
  const seen = new Set<string>();
  for (const c of known) {
    const hex = c.digest.toString('hex');
    if (seen.has(hex)) throw new Error(`internal callers must have different secrets (${c.name} shares one)`);
    seen.add(hex);
  }
  return (req, _res, next) => {
    const given = req.headers[INTERNAL_SECRET_HEADER];
    const digest = digestOf(typeof given === 'string' ? given : '');
    // Every caller is compared, so the time taken does not tell which one matched.
    let caller: (typeof known)[number] | undefined;
    for (const c of known) if (timingSafeEqual(digest, c.digest) && typeof given === 'string') caller = c;
    if (!caller) {
      next(ServiceError.of('InternalSecretRequired'));
      return;
    }
    const path = normalise(req.path);
    // Dot segments and escapes are never granted: what they name is for the router to decide.
    const plain = !/%|\/\.\.?(\/|$)/.test(req.path);
    if (!plain || !caller.routes.some((r) => path === r || path.startsWith(`${r}/`))) {
      next(ServiceError.of('InternalRouteForbidden', `internal endpoint: ${caller.name} may not call ${req.path}`));
      return;
    }
    next();
  };
}

const digestOf = (s: string): Buffer => createHash('sha256').update(s).digest();
// Lower case like express's routing, which matches paths case-insensitively.
const normalise = (p: string): string => `/${p.toLowerCase().split('/').filter(Boolean).join('/')}`;
