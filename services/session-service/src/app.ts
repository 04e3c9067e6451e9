import express from 'express';
import { ServiceError } from '@cp/errors';
import type { AuditLog, Logger } from '@cp/logging';
import type { RequestRateLimiter } from '@cp/rate-limit';
import { audited, type InternalCaller, type ServiceMetrics, requireInternalSecret, serviceApp } from '@cp/service-kit';
import { describeRefresh } from './http/auditRefresh';
import { errorHandler } from './http/errorHandler';
import { internalRoutes, publicRoutes } from './http/sessionRoutes';
import type { SessionService } from './sessions/SessionService';
import type { ApiKeyChecker } from '@cp/registry';

export interface SessionAppDeps {
  logger: Logger;
  /** The audit trail: every refresh, done or refused. */
  audit: AuditLog;
  metrics: ServiceMetrics;
  sessions: SessionService;
  apiKeys: ApiKeyChecker;
  /** Who may call /internal/* and which routes each may reach (see internalCallers). */
  internalCallers: InternalCaller[];
  /** Limits /sessions per api key and client address; null: no limits. */
  rateLimiter: RequestRateLimiter | null;
}

/** The session-service's express app, built from its dependencies; no I/O happens here. */
export function buildApp(deps: SessionAppDeps): express.Express {
  const app = serviceApp({ logger: deps.logger, metrics: deps.metrics });
  app.use('/internal', requireInternalSecret(deps.internalCallers), internalRoutes(deps.sessions));
  app.use('/sessions', audited(deps.audit, describeRefresh));
  if (deps.rateLimiter) app.use('/sessions', deps.rateLimiter.middleware());
  app.use(publicRoutes(deps.sessions, deps.apiKeys));
  app.use((req, _res, next) => {
    next(ServiceError.of('NotFound', `no route for ${req.method} ${req.path}`));
  });
  app.use(errorHandler(deps.logger));
  return app;
}

/**
 * The services that call the session-service's /internal/*: the auth-service creates sessions at
 * sign-in (and may validate them); the content-service only validates sids.
 */
export function internalCallers(secrets: { authService: string; contentService: string }): InternalCaller[] {
  return [
    { name: 'auth-service', secret: secrets.authService, routes: ['/sessions'] },
    { name: 'content-service', secret: secrets.contentService, routes: ['/sessions/validate'] },
  ];
}
