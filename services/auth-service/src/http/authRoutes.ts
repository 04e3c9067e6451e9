import express, { Router, type Request, type Response } from 'express';
import { ServiceError } from '@cp/errors';
import { HEADERS, headerKey } from '@cp/protocol';
import type { CertificateSignIn } from '../challenges/CertificateSignIn';
import type { ApiKeyStore } from '@cp/registry';

const PREFIX = /^\/auth\/(v5\.\d+)\/(authenticate-by-cert|approve-cert)\/?$/;

/** The certificate sign-in API, reached through the gateway at any /auth/v5.x. */
export function authRoutes(signIn: CertificateSignIn, apiKeys: ApiKeyStore, publicBaseUrl: string | undefined): Router {
  const router = Router();
  // Large enough for a body of hundreds of certificates to be counted and refused with 406
  // (their number is checked before anything is decoded); a real chain is a few KiB.
  const certificateBody = express.raw({ type: () => true, limit: '2mb' });
  const rndBody = express.raw({ type: () => true, limit: '4kb' }); // the rnd is 48 bytes
  // AuthenticateByCert and ApproveCert: `authenticate` and `approve` below, each answered here.
  router.use(function signInRoutes(req, res, next) {
    const m = PREFIX.exec(req.path);
    if (!m) return next();
    if (req.method !== 'POST') throw ServiceError.of('MethodNotAllowed');
    const started = process.hrtime.bigint();
    // The time this service spent on the request, body included (clients and tests read it).
    const timed = (): void => {
      if (!res.headersSent)
        res.setHeader('Server-Timing', `auth;dur=${(Number(process.hrtime.bigint() - started) / 1e6).toFixed(1)}`);
    };
    const body = m[2] === 'authenticate-by-cert' ? certificateBody : rndBody;
    body(req, res, (error?: unknown) => {
      if (error) {
        timed();
        return next(error);
      }
      const answer = m[2] === 'authenticate-by-cert' ? authenticate(req, m[1]!) : approve(req, res);
      answer.then(
        (value) => {
          timed();
          res.status(200).json(value);
        },
        (failure: unknown) => {
          timed();
          next(failure);
        },
      );
    });
  });

  async function authenticate(req: Request, version: string): Promise<unknown> {
    const apiKey = apiKeyOf(req);
    const cert = bodyOf(req);
    const missing = [!cert && 'certificate body', !apiKey && 'api key'].filter(Boolean);
    if (missing.length) throw ServiceError.of('MissingParameters', `missing: ${missing.join(', ')}`);
    const grant = await apiKeys.grantOf(apiKey!);
    if (!grant) throw ServiceError.of('InvalidApiKey');
    const free = parseFree(query(req, 'free'));
    if (free && !grant.allowFree) {
      throw ServiceError.of('FreeNotAllowed');
    }
    const challenge = await signIn.authenticate(cert!, free);
    const base = publicBaseUrl ?? baseFromRequest(req);
    return {
      EncryptedKey: challenge.encryptedKey.toString('base64'),
      Link: {
        Rel: 'approve-cert',
        Href: `${base.replace(/\/+$/, '')}/auth/${version}/approve-cert?thumbprint=${challenge.thumbprint}`,
      },
    };
  }

  async function approve(req: Request, res: Response): Promise<unknown> {
    const apiKey = apiKeyOf(req);
    const thumbprint = query(req, 'thumbprint');
    const missing = [!thumbprint && 'thumbprint', !apiKey && 'api key'].filter(Boolean);
    if (missing.length) throw ServiceError.of('MissingParameters', `missing: ${missing.join(', ')}`);
    if (!(await apiKeys.isValid(apiKey!))) throw ServiceError.of('InvalidApiKey');
    const pair = await signIn.approve(thumbprint!, bodyOf(req) ?? Buffer.alloc(0), (userId) => {
      res.locals.userId = userId; // for its audit record
    });
    return pair;
  }

  return router;
}

/** A query parameter by its name in any case: the first non-empty value. */
export function query(req: Request, name: string): string | undefined {
  for (const [k, v] of Object.entries(req.query)) {
    if (k.toLowerCase() !== name.toLowerCase()) continue;
    const s = Array.isArray(v) ? v[0] : v;
    if (typeof s === 'string' && s !== '') return s;
  }
  return undefined;
}

function apiKeyOf(req: Request): string | undefined {
  const header = req.headers[headerKey(HEADERS.apiKey)];
  return (
    query(req, 'apiKey') ?? query(req, 'api-key') ?? (typeof header === 'string' && header !== '' ? header : undefined)
  );
}

function bodyOf(req: Request): Buffer | undefined {
  return Buffer.isBuffer(req.body) && req.body.length > 0 ? req.body : undefined;
}

/** `free`: a case-insensitive boolean, false when absent. */
function parseFree(value: string | undefined): boolean {
  if (value === undefined) return false;
  const v = value.trim().toLowerCase();
  if (v === 'true' || v === '1') return true;
  if (v === 'false' || v === '0' || v === '') return false;
  throw ServiceError.of('InvalidParameter', 'free must be true or false');
}

function baseFromRequest(req: Request): string {
  const proto = String(req.headers['x-forwarded-proto'] ?? req.protocol)
    .split(',')[0]!
    .trim();
  const host = String(req.headers['x-forwarded-host'] ?? req.headers.host ?? 'localhost')
    .split(',')[0]!
    .trim();
  return `${proto}://${host}`;
}
