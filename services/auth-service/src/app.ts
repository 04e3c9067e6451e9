import express from 'express';
import { ServiceError } from '@cp/errors';
import type { Logger } from '@cp/logging';
import { type ReadinessCheck, type ServiceMetrics, requireInternalSecret, serviceApp } from '@cp/service-kit';
import type { CertificateSignIn } from './challenges/CertificateSignIn';
import { authRoutes } from './http/authRoutes';
import { errorHandler } from './http/errorHandler';
import { internalRoutes } from './http/internalRoutes';
import type { ApiKeyStore } from './store/ApiKeyStore';
import type { UserRegistry } from './store/UserRegistry';

export interface AuthAppDeps {
  logger: Logger;
  metrics: ServiceMetrics;
  signIn: CertificateSignIn;
  apiKeys: ApiKeyStore;
  users: UserRegistry;
  internalSecret: string;
  publicBaseUrl?: string;
  readiness: ReadinessCheck[];
  isDraining: () => boolean;
}

/** The auth-service's express app, built from its dependencies; no I/O happens here. */
export function buildApp(deps: AuthAppDeps): express.Express {
  const app = serviceApp({ logger: deps.logger, metrics: deps.metrics, readiness: deps.readiness, isDraining: deps.isDraining });
  app.use('/internal', requireInternalSecret(deps.internalSecret), internalRoutes(deps.apiKeys, deps.users));
  app.use(authRoutes(deps.signIn, deps.apiKeys, deps.publicBaseUrl));
  app.use((req, _res, next) => {
    next(ServiceError.notFound('NotFound', `no route for ${req.method} ${req.path}`));
  });
  app.use(errorHandler(deps.logger));
  return app;
}
