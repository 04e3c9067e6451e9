import express, { type RequestHandler } from 'express';
import type { Logger } from '@cp/logging';
import { accessLog } from './accessLog';
import { healthRoutes, type ReadinessCheck } from './healthRoutes';
import { requestId } from './requestId';
import type { ServiceMetrics } from './ServiceMetrics';

export interface ServiceAppDeps {
  logger: Logger;
  metrics: ServiceMetrics;
  readiness: ReadinessCheck[];
  isDraining: () => boolean;
  /**
   * True when /readyz and /metrics are served on an admin port instead (see `adminApp`): the app
   * then serves /healthz only. For a service whose port is public (the gateway).
   */
  separateAdmin?: boolean;
  /** Runs after the request id and access log, before anything else (the gateway's head checks). */
  before?: RequestHandler[];
}

/**
 * The start every service's express app shares: request ids, one access-log line per request,
 * /healthz /readyz /metrics, and request timing. The service adds its routes after it.
 */
export function serviceApp(deps: ServiceAppDeps): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use(requestId());
  app.use(accessLog(deps.logger));
  for (const handler of deps.before ?? []) app.use(handler);
  app.use(healthRoutes({ checks: deps.readiness, metrics: deps.metrics, isDraining: deps.isDraining, healthOnly: deps.separateAdmin }));
  app.use(deps.metrics.middleware());
  return app;
}

/** /healthz, /readyz and /metrics on their own: for an admin port that only the cluster reaches. */
export function adminApp(deps: Pick<ServiceAppDeps, 'metrics' | 'readiness' | 'isDraining'>): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.use(healthRoutes({ checks: deps.readiness, metrics: deps.metrics, isDraining: deps.isDraining }));
  app.use((_req, res) => {
    res.status(404).json({ status: 'not found' });
  });
  return app;
}
