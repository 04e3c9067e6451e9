import type { Request, RequestHandler } from 'express';
import { endIncomingRequest, runInContext, startIncomingRequest } from '@cp/tracing';
import { whenDone } from './whenDone';

export interface TraceRequestsOptions {
  /** Whether a caller's W3C trace context is continued (the services behind the gateway) or a new trace starts, linked to it (the gateway by default). */
  trustIncoming: boolean;
  /** A request's route, bounded (the metrics' label). */
  routeOf: (req: Request) => string;
}

/**
 * The SERVER span of each request, active while it is handled: method and route, the path without
 * its query (where credentials may travel), the status, the request id. Installed only when the
 * process traces (see serviceApp).
 */
export function traceRequests(options: TraceRequestsOptions): RequestHandler {
  return (req, res, next) => {
    const incoming = startIncomingRequest(
      req.headers,
      req.method,
      { 'http.request.method': req.method, 'url.path': req.path, 'cp.request_id': req.id },
      options.trustIncoming,
    );
    if (!incoming) return next();
    whenDone(res, (finished) =>
      endIncomingRequest(incoming, `${req.method} ${options.routeOf(req)}`, res.statusCode, finished),
    );
    runInContext(incoming.context, next);
  };
}
