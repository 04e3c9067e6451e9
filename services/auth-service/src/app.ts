import express from 'express';
import { ServiceError } from '@cp/errors';
import type { Logger } from '@cp/logging';
import { accessLog, healthRoutes, requestId, type ReadinessCheck, type ServiceMetrics } from '@cp/service-kit';
import type { CertificateSignIn } from './challenges/CertificateSignIn';
import { authRoutes } from './http/authRoutes';
import { errorHandler } from './http/errorHandler';
import { requireInternalSecret } from './http/internalSecret';
import { internalRoutes } from './http/internalRoutes';
import type { ApiKeyStore } from './store/ApiKeyStore';

export interface AuthAppDeps {
  logger: Logger;
  metrics: ServiceMetrics;
  signIn: CertificateSignIn;
  apiKeys: ApiKeyStore;
  internalSecret: string;
  publicBaseUrl?: string;
  readiness: ReadinessCheck[];
  isDraining: () => boolean;
}

/** The auth-service's express app, built from its dependencies; no I/O happens here. */
export function buildApp(deps: AuthAppDeps): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use(requestId());
  app.use(accessLog(deps.logger));
  app.use(healthRoutes({ checks: deps.readiness, metrics: deps.metrics, isDraining: deps.isDraining }));
  app.use(deps.metrics.middleware());
  app.use('/internal', requireInternalSecret(deps.internalSecret), internalRoutes(deps.apiKeys));
  app.use(authRoutes(deps.signIn, deps.apiKeys, deps.publicBaseUrl));
  app.use((req, _res, next) => {
    next(ServiceError.notFound('NotFound', `no route for ${req.method} ${req.path}`));
  });
  app.use(errorHandler(deps.logger));
  return app;
}
