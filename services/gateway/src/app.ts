import type { IncomingMessage, ServerResponse } from 'node:http';
import { Agent } from 'node:http';
import type { Socket } from 'node:net';
import express from 'express';
import { createProxyMiddleware, type RequestHandler as ProxyHandler } from 'http-proxy-middleware';
import type { Logger } from '@cp/logging';
import { type ServiceMetrics, serviceApp } from '@cp/service-kit';
import { docsRoutes } from './docs/docsRoutes';
import { EdgeRefusal, edgeChecks } from './http/edgeChecks';
import { upstreamFor, type Upstream } from './http/routes';
import { gatewayErrorBody } from './http/upstreamErrorBody';

export interface GatewayDeps {
  logger: Logger;
  metrics: ServiceMetrics;
  upstreams: Partial<Record<Upstream, string>>;
  upstreamTimeoutMs: number;
}

/**
 * The public side of the gateway (its /readyz and /metrics are on the admin port, as in every service).
 * The edge of the system: routes /v1, /auth/v5.x and /sessions/v5.x to their services, streaming
 * bodies both ways without parsing them. No body parser sits anywhere in front of the proxies.
 */
export function buildApp(deps: GatewayDeps): express.Express {
  const app = serviceApp({
    logger: deps.logger,
    metrics: deps.metrics,
    before: [deps.metrics.middleware(), edgeChecks()],
  });
  app.use(docsRoutes());

  const agent = new Agent({ keepAlive: true, maxSockets: 512, keepAliveMsecs: 10_000 });
  // http-proxy ends a request past proxyTimeout with abort(), whose error is a plain ECONNRESET:
  // the requests whose upstream went silent are noted here so they get 504, not 503.
  const timedOut = new WeakSet<IncomingMessage>();
  const proxies = new Map<Upstream, ProxyHandler>();
  for (const [name, target] of Object.entries(deps.upstreams) as [Upstream, string][]) {
    proxies.set(
      name,
      createProxyMiddleware<IncomingMessage, ServerResponse>({
        target,
        agent,
        xfwd: true,
        proxyTimeout: deps.upstreamTimeoutMs,
        on: {
          // Pass the head on at once: the upstream may answer from it (401, 404, 409 ...) before any
          // body byte; Node would otherwise hold the head back until the first body chunk.
          proxyReq: (proxyReq, req) => {
            proxyReq.flushHeaders();
            proxyReq.once('timeout', () => timedOut.add(req));
          },
          error: (error, req, res) => answerUpstreamFailure(deps.logger, name, error, req, res, timedOut.has(req)),
        },
      }),
    );
  }

  app.use((req, res, next) => {
    const upstream = upstreamFor(req.path);
    const proxy = upstream && proxies.get(upstream);
    if (proxy) {
      // edgeChecks has refused what the head alone condemns (a write without a length included).
      void proxy(req, res, next);
      return;
    }
    sendError(res, upstream, new EdgeRefusal('routeNotFound', `no route for ${req.method} ${req.path}`), req.id);
  });
  return app;
}

function answerUpstreamFailure(logger: Logger, upstream: Upstream, error: Error, req: IncomingMessage, res: ServerResponse | Socket, silent: boolean): void {
  const code = (error as NodeJS.ErrnoException).code;
  logger.warn({ reqId: req.id, upstream, code, err: error.message }, 'upstream failed');
  if (!('setHeader' in res) || res.headersSent) {
    res.destroy();
    return;
  }
  const timedOut = silent || code === 'ETIMEDOUT' || code === 'ESOCKETTIMEDOUT';
  const failure = timedOut
    ? new EdgeRefusal('upstreamTimeout', `the ${upstream} service did not answer in time`)
    : new EdgeRefusal('serviceUnavailable', `the ${upstream} service is unavailable; retry later`);
  res.setHeader('Retry-After', '5');
  if (!req.complete) res.setHeader('Connection', 'close');
  sendError(res, upstream, failure, req.id);
}

function sendError(res: ServerResponse, upstream: Upstream | null, { status, code, message }: EdgeRefusal, trackId: string): void {
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.end(JSON.stringify(gatewayErrorBody(upstream, status, code, message, trackId)));
}
