import express from 'express';
import { ServiceError } from '@cp/errors';
import type { AuditLog, Logger } from '@cp/logging';
import type { RequestRateLimiter } from '@cp/rate-limit';
import { audited, type InternalCaller, type ServiceMetrics, requireInternalSecret, serviceApp } from '@cp/service-kit';
import type { CertificateSignIn } from './challenges/CertificateSignIn';
import { describeSignIn } from './http/auditSignIn';
import { authRoutes } from './http/authRoutes';
import { errorHandler } from './http/errorHandler';
import { internalRoutes } from './http/internalRoutes';
import type { ApiKeyStore } from './store/ApiKeyStore';
import type { UserRegistry } from './store/UserRegistry';

export interface AuthAppDeps {
  logger: Logger;
  /** The audit trail: every sign-in, done or refused. */
  audit: AuditLog;
  metrics: ServiceMetrics;
  signIn: CertificateSignIn;
  apiKeys: ApiKeyStore;
  users: UserRegistry;
  /** Who may call /internal/* and which routes each may reach (see internalCallers). */
  internalCallers: InternalCaller[];
  /** Limits /auth per api key and client address; null: no limits. */
  rateLimiter: RequestRateLimiter | null;
  publicBaseUrl?: string;
}

/** The auth-service's express app, built from its dependencies; no I/O happens here. */
export function buildApp(deps: AuthAppDeps): express.Express {
  const app = serviceApp({ logger: deps.logger, metrics: deps.metrics });
  app.use('/internal', requireInternalSecret(deps.internalCallers), internalRoutes(deps.apiKeys, deps.users));
  app.use('/auth', audited(deps.audit, describeSignIn));
  if (deps.rateLimiter) app.use('/auth', deps.rateLimiter.middleware());
  app.use(authRoutes(deps.signIn, deps.apiKeys, deps.publicBaseUrl));
  app.use((req, _res, next) => {
    next(ServiceError.of('NotFound', `no route for ${req.method} ${req.path}`));
  });
  app.use(errorHandler(deps.logger));
  return app;
}

/**
 * The services that call the auth-service's /internal/*: only the session-service, which checks
 * the api keys presented to /sessions and (with the thumbprint of a sign-in) registrations.
 */
export function internalCallers(secrets: { sessionService: string }): InternalCaller[] {
  return [{ name: 'session-service', secret: secrets.sessionService, routes: ['/api-keys', '/registrations'] }];
}
