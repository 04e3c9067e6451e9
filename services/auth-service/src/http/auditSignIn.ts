import type { Request, Response } from 'express';
import type { Described } from '@cp/service-kit';
import { query } from './authRoutes';

const APPROVE = /^\/auth\/v5\.\d+\/approve-cert\/?$/;

/**
 * The audit record of a certificate sign-in: its approve-cert, done or refused, by the
 * certificate's thumbprint and, once the certificate is known, its user. The challenge
 * (authenticate-by-cert) is not an audited fact.
 */
export function describeSignIn(req: Request, res: Response): Described[] {
  if (!APPROVE.test(req.originalUrl.split('?')[0]!)) return [];
  const thumbprint = query(req, 'thumbprint');
  const certificate = thumbprint && /^[0-9A-Fa-f]{40}$/.test(thumbprint) ? thumbprint.toUpperCase() : null;
  const userId = res.locals.userId as string | undefined;
  return [{ event: 'session.signin', actor: { kind: 'certificate', subject: userId ?? null, certificate } }];
}
