import express, { Router, type Request } from 'express';
import { ServiceError } from '@cp/errors';
import { HEADERS, headerKey } from '@cp/protocol';
import type { ApiKeyChecker } from '@cp/registry';
import type { SessionService } from '../sessions/SessionService';

const REFRESH_PATH = /^\/sessions\/v5\.\d+\/sessions\/refresh\/?$/;

/** The public refresh API, reached through the gateway at any /sessions/v5.x. */
export function publicRoutes(sessions: SessionService, apiKeys: ApiKeyChecker): Router {
  const router = Router();
  router.use(async function refreshSession(req, res, next) {
    if (!REFRESH_PATH.test(req.path)) return next();
    if (req.method !== 'POST') throw ServiceError.of('MethodNotAllowed');
    const sid = firstOf(req, ['auth.sid', 'sid']) ?? sidFromHeaders(req);
    const refreshToken =
      firstOf(req, ['refresh-token', 'refreshToken']) ?? header(req, headerKey(HEADERS.refreshToken));
    const apiKey = firstOf(req, ['api-key', 'apiKey']) ?? header(req, headerKey(HEADERS.apiKey));
    const missing = [!sid && 'auth.sid', !refreshToken && 'refresh-token', !apiKey && 'api-key'].filter(Boolean);
    if (missing.length) throw ServiceError.of('MissingParameters', `missing: ${missing.join(', ')}`);
    if (!(await apiKeys.isValid(apiKey!))) throw ServiceError.of('InvalidApiKey');
    const pair = await sessions.refresh(sid!, refreshToken!, (userId, thumbprint) => {
      res.locals.user = { userId, thumbprint }; // for its audit record
    });
    res.status(200).json(pair);
  });
  return router;
}

/** Service-to-service endpoints; never routed by the gateway, guarded by the shared secret. */
export function internalRoutes(sessions: SessionService): Router {
  const router = Router();
  router.use(express.json({ limit: '16kb' }));
  router.post('/sessions', async function createSession(req, res) {
    const { userId, owners, thumbprint } = (req.body ?? {}) as {
      userId?: unknown;
      owners?: unknown;
      thumbprint?: unknown;
    };
    if (
      typeof userId !== 'string' ||
      !userId ||
      !Array.isArray(owners) ||
      !owners.every((o) => typeof o === 'string')
    ) {
      throw ServiceError.of(
        'MissingParameters',
        'send {"userId": "...", "owners": ["..."], "thumbprint": "<sha-1 hex>"}',
      );
    }
    if (thumbprint !== undefined && (typeof thumbprint !== 'string' || !/^[0-9A-Fa-f]{40}$/.test(thumbprint))) {
      throw ServiceError.of('MissingParameters', 'thumbprint must be the SHA-1 of the certificate, hex');
    }
    res.status(201).json(
      await sessions.create(
        userId,
        owners.map((o: string) => o.toLowerCase()),
        thumbprint,
      ),
    );
  });
  router.post('/sessions/validate', async function validateSession(req, res) {
    const { sid } = (req.body ?? {}) as { sid?: unknown };
    if (typeof sid !== 'string') throw ServiceError.of('MissingParameters', 'send {"sid": "..."}');
    const session = await sessions.validate(sid);
    if (!session) throw ServiceError.of('SessionNotFound');
    res.status(200).json(session);
  });
  return router;
}

function firstOf(req: Request, names: string[]): string | undefined {
  for (const name of names) {
    const v = req.query[name];
    const s = Array.isArray(v) ? v[0] : v;
    if (typeof s === 'string' && s !== '') return s;
  }
  return undefined;
}

function header(req: Request, name: string): string | undefined {
  const v = req.headers[name];
  return typeof v === 'string' && v !== '' ? v : undefined;
}

function sidFromHeaders(req: Request): string | undefined {
  const m = /^\s*auth\.sid\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
  if (m) return m[1];
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === 'auth.sid') return part.slice(eq + 1).trim() || undefined;
  }
  return undefined;
}
