import express from 'express';
import { ServiceError } from '@cp/errors';
import type { Logger } from '@cp/logging';
import { accessLog, healthRoutes, requestId, type ReadinessCheck, type ServiceMetrics } from '@cp/service-kit';
import { errorHandler } from './http/errorHandler';
import { requireInternalSecret } from './http/internalSecret';
import { internalRoutes, publicRoutes } from './http/sessionRoutes';
import type { SessionService } from './sessions/SessionService';
import type { ApiKeyChecker } from './store/ApiKeyVerifier';

export interface SessionAppDeps {
  logger: Logger;
  metrics: ServiceMetrics;
  sessions: SessionService;
  apiKeys: ApiKeyChecker;
  internalSecret: string;
  readiness: ReadinessCheck[];
  isDraining: () => boolean;
}

/** The session-service's express app, built from its dependencies; no I/O happens here. */
export function buildApp(deps: SessionAppDeps): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use(requestId());
  app.use(accessLog(deps.logger));
  app.use(healthRoutes({ checks: deps.readiness, metrics: deps.metrics, isDraining: deps.isDraining }));
  app.use(deps.metrics.middleware());
  app.use('/internal', requireInternalSecret(deps.internalSecret), internalRoutes(deps.sessions));
  app.use(publicRoutes(deps.sessions, deps.apiKeys));
  app.use((req, _res, next) => {
    next(ServiceError.notFound('NotFound', `no route for ${req.method} ${req.path}`));
  });
  app.use(errorHandler(deps.logger));
  return app;
}
