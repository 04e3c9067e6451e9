import express from 'express';
import { ServiceError } from '@cp/errors';
import type { Logger } from '@cp/logging';
import { type ReadinessCheck, type ServiceMetrics, requireInternalSecret, serviceApp } from '@cp/service-kit';
import { errorHandler } from './http/errorHandler';
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
  const app = serviceApp({ logger: deps.logger, metrics: deps.metrics, readiness: deps.readiness, isDraining: deps.isDraining });
  app.use('/internal', requireInternalSecret(deps.internalSecret), internalRoutes(deps.sessions));
  app.use(publicRoutes(deps.sessions, deps.apiKeys));
  app.use((req, _res, next) => {
    next(ServiceError.notFound('NotFound', `no route for ${req.method} ${req.path}`));
  });
  app.use(errorHandler(deps.logger));
  return app;
}
