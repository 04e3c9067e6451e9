import express from 'express';
import { ServiceError } from '@cp/errors';
import type { AuditLog, Logger } from '@cp/logging';
import type { RequestRateLimiter } from '@cp/rate-limit';
import { audited, type ServiceMetrics, serviceApp } from '@cp/service-kit';
import type { CertificateSignIn } from './challenges/CertificateSignIn';
import { describeSignIn } from './http/auditSignIn';
import { authRoutes } from './http/authRoutes';
import { errorHandler } from './http/errorHandler';
import type { ApiKeyStore } from '@cp/registry';

export interface AuthAppDeps {
  logger: Logger;
  /** The audit trail: every sign-in, done or refused. */
  audit: AuditLog;
  metrics: ServiceMetrics;
  signIn: CertificateSignIn;
  apiKeys: ApiKeyStore;
  /** Limits /auth per api key and client address; null: no limits. */
  rateLimiter: RequestRateLimiter | null;
  publicBaseUrl?: string;
}

/**
 * The auth-service's express app, built from its dependencies; no I/O happens here. It has no
 * /internal routes: no service calls it (the session-service reads the registry's database).
 */
export function buildApp(deps: AuthAppDeps): express.Express {
  const app = serviceApp({ logger: deps.logger, metrics: deps.metrics });
  app.use('/auth', audited(deps.audit, describeSignIn));
  if (deps.rateLimiter) app.use('/auth', deps.rateLimiter.middleware());
  app.use(authRoutes(deps.signIn, deps.apiKeys, deps.publicBaseUrl));
  app.use((req, _res, next) => {
    next(ServiceError.of('NotFound', `no route for ${req.method} ${req.path}`));
  });
  app.use(errorHandler(deps.logger));
  return app;
}
