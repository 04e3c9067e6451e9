import express, { type RequestHandler } from 'express';
import type { Logger } from '@cp/logging';
import { accessLog } from './accessLog';
import { healthRoutes, livenessRoute, type ReadinessCheck } from './healthRoutes';
import { isTracing } from '@cp/tracing';
import { requestId } from './requestId';
import type { ServiceMetrics } from './ServiceMetrics';
import { traceRequests } from './traceRequests';

export interface ServiceAppDeps {
  logger: Logger;
  metrics: ServiceMetrics;
  /** Runs after the request id and access log, before anything else (the gateway's head checks). */
  before?: RequestHandler[];
  /** Whether a caller's W3C trace context is continued (default) or a new trace starts (the gateway's TRACE_INCOMING_CONTEXT). */
  trustIncomingTrace?: boolean;
}

/**
 * The start every service's express app shares: request ids, one access-log line per request,
 * /healthz (liveness), request timing, and (when tracing) a span per request. The service adds its routes after it. /readyz,
 * /healthz/deps and /metrics are on the admin port only (`adminApp`, started by `startService`).
 */
export function serviceApp(deps: ServiceAppDeps): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use(requestId());
  // Only in a process that traces: otherwise no span, no context, no cost.
  if (isTracing())
    app.use(
      traceRequests({ trustIncoming: deps.trustIncomingTrace ?? true, routeOf: (req) => deps.metrics.routeOf(req) }),
    );
  app.use(accessLog(deps.logger));
  for (const handler of deps.before ?? []) app.use(handler);
  app.use(livenessRoute());
  app.use(deps.metrics.middleware());
  return app;
}

/** /healthz, /readyz, /healthz/deps and /metrics on their own: for an admin port that only the cluster reaches. */
export function adminApp(deps: {
  metrics: ServiceMetrics;
  readiness: ReadinessCheck[];
  isDraining: () => boolean;
}): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.use(healthRoutes({ checks: deps.readiness, metrics: deps.metrics, isDraining: deps.isDraining }));
  app.use((_req, res) => {
    res.status(404).json({ status: 'not found' });
  });
  return app;
}
