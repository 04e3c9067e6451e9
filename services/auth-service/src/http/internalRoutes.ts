import express, { Router } from 'express';
import { ServiceError } from '@cp/errors';
import type { ApiKeyStore } from '../store/ApiKeyStore';

/** Service-to-service endpoints (the session-service checks api keys here); never routed by the gateway. */
export function internalRoutes(apiKeys: ApiKeyStore): Router {
  const router = Router();
  router.use(express.json({ limit: '4kb' }));
  router.post('/api-keys/verify', async (req, res) => {
    const { apiKey } = (req.body ?? {}) as { apiKey?: unknown };
    if (typeof apiKey !== 'string' || !apiKey) throw ServiceError.badRequest('MissingParameters', 'send {"apiKey": "..."}');
    if (!(await apiKeys.isValid(apiKey))) throw ServiceError.notFound('InvalidApiKey', 'unknown api key');
    res.status(200).json({ valid: true });
  });
  return router;
}
