import express, { Router } from 'express';
import { ServiceError } from '@cp/errors';
import type { ApiKeyStore } from '../store/ApiKeyStore';
import type { UserRegistry } from '../store/UserRegistry';

/** Service-to-service endpoints (the session-service checks api keys and registrations here); never routed by the gateway. */
export function internalRoutes(apiKeys: ApiKeyStore, users: UserRegistry): Router {
  const router = Router();
  router.use(express.json({ limit: '4kb' }));
  router.post('/api-keys/verify', async (req, res) => {
    const { apiKey } = (req.body ?? {}) as { apiKey?: unknown };
    if (typeof apiKey !== 'string' || !apiKey) throw ServiceError.of('MissingParameters', 'send {"apiKey": "..."}');
    if (!(await apiKeys.isValid(apiKey))) throw ServiceError.of('InvalidApiKey', 'unknown api key', { status: 404 });
    res.status(200).json({ valid: true });
  });
  // Asked on every refresh: is the user, and the certificate the session signed in with, still
  // registered? A verdict is always 200; only a failure to find out is an error status.
  router.post('/registrations/check', async (req, res) => {
    const { userId, thumbprint } = (req.body ?? {}) as { userId?: unknown; thumbprint?: unknown };
    if (
      typeof userId !== 'string' ||
      !userId ||
      (thumbprint !== undefined && (typeof thumbprint !== 'string' || !/^[0-9A-Fa-f]{40}$/.test(thumbprint)))
    ) {
      throw ServiceError.of('MissingParameters', 'send {"userId": "...", "thumbprint": "<sha-1 hex, optional>"}');
    }
    const [user, cert] = await Promise.all([
      users.user(userId),
      thumbprint === undefined ? null : users.certificate(thumbprint),
    ]);
    if (!user) return void res.status(200).json({ registered: false, reason: 'UserRemoved' });
    if (thumbprint !== undefined && (!cert || cert.userId !== user._id))
      return void res.status(200).json({ registered: false, reason: 'CertificateRemoved' });
    res.status(200).json({ registered: true, owners: user.owners });
  });
  return router;
}
