import type { ClientRequest, IncomingMessage, ServerResponse } from 'node:http';
import { Agent } from 'node:http';
import type { Socket } from 'node:net';
import express from 'express';
import { createProxyMiddleware, type RequestHandler as ProxyHandler } from 'http-proxy-middleware';
import type { Logger } from '@cp/logging';
import {
  closeAfterAnswer,
  closeIdleSockets,
  coalesceWrites,
  namesClose,
  type ServiceMetrics,
  serviceApp,
} from '@cp/service-kit';
import { endOutgoingCall, startOutgoingCall } from '@cp/tracing';
import type { ApiDescription } from './docs/ApiDescription';
import { docsRoutes } from './docs/docsRoutes';
import { corsMiddleware, corsOnUpstreamAnswer, type CorsPolicy } from './http/cors';
import { EdgeRefusal, edgeChecks } from './http/edgeChecks';
import { apiOf, upstreamFor, type Upstream } from './http/routes';
import { sendGatewayError } from './http/upstreamErrorBody';

export interface GatewayDeps {
  logger: Logger;
  metrics: ServiceMetrics;
  upstreams: Partial<Record<Upstream, string>>;
  /** Longest silence of the content-service (slow links, big parts). */
  upstreamTimeoutMs: number;
  /** Longest silence of the auth- and session-service, whose answers are small and quick (default: upstreamTimeoutMs). */
  signInUpstreamTimeoutMs?: number;
  /** Whether a client's W3C trace context is continued (TRACE_INCOMING_CONTEXT=trust) or a new trace starts. */
  trustIncomingTrace?: boolean;
  /** The OpenAPI description served at /openapi.yaml and /docs (default: the checked-in file). */
  description?: ApiDescription;
  /** Cross-origin access for browsers (CORS_ALLOWED_ORIGINS); absent or without origins: off. */
  cors?: CorsPolicy;
}

/**
 * The public side of the gateway (its /readyz and /metrics are on the admin port, as in every service).
 * The edge of the system: routes /v1, /auth/v5.x and /sessions/v5.x to their services, streaming
 * bodies both ways without parsing them. No body parser sits anywhere in front of the proxies.
 */
export function buildApp(deps: GatewayDeps): express.Express {
  const cors = deps.cors && deps.cors.origins.length > 0 ? deps.cors : undefined;
  const app = serviceApp({
    logger: deps.logger,
    metrics: deps.metrics,
    // Preflights are answered before anything else reads the request (they carry no credentials).
    before: [deps.metrics.middleware(), ...(cors ? [corsMiddleware(cors)] : []), edgeChecks()],
    trustIncomingTrace: deps.trustIncomingTrace ?? false,
  });
  app.use(docsRoutes(deps.description));

  const agent = closeIdleSockets(new RoomyAgent({ keepAlive: true, maxSockets: 512, keepAliveMsecs: 10_000 }));
  const proxies = new Map<Upstream, ProxyHandler>();
  for (const [name, target] of Object.entries(deps.upstreams) as [Upstream, string][]) {
    const silenceMs =
      name === 'content' ? deps.upstreamTimeoutMs : (deps.signInUpstreamTimeoutMs ?? deps.upstreamTimeoutMs);
    proxies.set(
      name,
      createProxyMiddleware<IncomingMessage, ServerResponse>({
        target,
        agent,
        // X-Forwarded-* are written in proxyReq below: httpxy's xfwd only sets X-Forwarded-For when
        // it is absent, so the address the gateway saw would be lost behind a client's own value.
        xfwd: false,
        on: {
          proxyReq: (proxyReq, req) => {
            forwardedHeaders(proxyReq, req);
            traceUpstreamCall(proxyReq, name, deps.trustIncomingTrace ?? false);
            // Pass the head on within this turn: the upstream may answer from it (401, 404, 409 ...)
            // before any body byte, and Node would otherwise hold it back until the first body chunk.
            // Not at once: body bytes already read then go out with the head, in one write.
            setImmediate(() => {
              if (!proxyReq.headersSent && !proxyReq.destroyed) proxyReq.flushHeaders();
            });
            // httpxy's own proxyTimeout destroys the request without a cause (a plain "socket hang
            // up"); this one says it timed out, so the client gets upstreamTimeout, not unavailable.
            proxyReq.setTimeout(silenceMs, () =>
              proxyReq.destroy(new UpstreamSilent(`no answer within ${silenceMs} ms`)),
            );
            // A client whose body broke off is answered by clientErrors once the request is over, so
            // its response finishes normally and httpxy (which aborts upstream only on an unfinished
            // response) would leave the upstream request open, and the content-service its part claim.
            const abortIfBrokenOff = () => {
              if (!req.complete) proxyReq.destroy();
            };
            if (req.closed) abortIfBrokenOff();
            else req.once('close', abortIfBrokenOff);
          },
          // Piped into the client's response right after this event: what one turn reads, one write.
          proxyRes: (proxyRes, req, res) => {
            // A service's answer before the whole body (a refusal mid-body) that closes the
            // connection: the client's is closed the lingering way too, or Node would reset it
            // under a client still sending, and the reset could beat the answer.
            if (!req.complete && namesClose(proxyRes.headers.connection)) closeAfterAnswer(req, res);
            corsOnUpstreamAnswer(proxyRes.headers, cors !== undefined);
            coalesceWrites(proxyRes, res);
          },
          error: (error, req, res) => answerUpstreamFailure(deps.logger, name, error, req, res),
        },
      }),
    );
  }

  app.use((req, res, next) => {
    const upstream = upstreamFor(req.path);
    const proxy = upstream && proxies.get(upstream);
    if (proxy) {
      // edgeChecks has refused what the head alone condemns (a write without a length included).
      // http-proxy-middleware 4 also hands a failed proxying to next() after its error event: the
      // event has answered it (answerUpstreamFailure), and Express must not answer it again.
      void proxy(req, res, (error?: unknown) => {
        if (error === undefined || !res.headersSent) next(error);
      });
      return;
    }
    const refusal = new EdgeRefusal('routeNotFound', `no route for ${req.method} ${req.path}`);
    sendGatewayError(res, apiOf(req.path), refusal, req.id);
  });
  return app;
}

/**
 * What each proxy in front of a service adds (services count trusted hops from the right of
 * X-Forwarded-For): the address, port and protocol this gateway was reached with, appended to
 * what came before it; the host only when no proxy named one.
 */
function forwardedHeaders(proxyReq: ClientRequest, req: IncomingMessage): void {
  const encrypted = 'encrypted' in req.socket && req.socket.encrypted === true;
  const seen = {
    for: req.socket.remoteAddress ?? '',
    port: String(req.socket.localPort ?? ''),
    proto: encrypted ? 'https' : 'http',
  };
  for (const [name, value] of Object.entries(seen)) {
    const prior = req.headers[`x-forwarded-${name}`];
    proxyReq.setHeader(`x-forwarded-${name}`, prior ? `${String(prior)},${value}` : value);
  }
  if (!req.headers['x-forwarded-host'] && req.headers.host) proxyReq.setHeader('x-forwarded-host', req.headers.host);
}

/**
 * The upstream continues the gateway's trace: a CLIENT span per proxied request whose W3C context
 * replaces whatever the client sent. Without tracing, a client's context passes only when trusted.
 */
function traceUpstreamCall(proxyReq: ClientRequest, upstream: Upstream, trusted: boolean): void {
  const call = startOutgoingCall(`${proxyReq.method} ${upstream}-service`, {
    'http.request.method': proxyReq.method,
    'server.address': proxyReq.host,
    'cp.upstream': upstream,
  });
  if (call || !trusted) {
    proxyReq.removeHeader('traceparent');
    proxyReq.removeHeader('tracestate');
  }
  if (!call) return;
  for (const [header, value] of Object.entries(call.headers)) proxyReq.setHeader(header, value);
  let status: number | undefined;
  proxyReq.once('response', (res: IncomingMessage) => (status = res.statusCode));
  proxyReq.once('error', (error) => endOutgoingCall(call, status, error));
  proxyReq.once('close', () => endOutgoingCall(call, status));
}

/** The largest answer head a service may send through the gateway (its clients' own limit is theirs). */
export const UPSTREAM_MAX_HEADER_BYTES = 256 * 1024;

/**
 * An agent whose requests read answer heads of up to UPSTREAM_MAX_HEADER_BYTES rather than Node's
 * 16 KiB (a resumed upload's long X-Received-Ranges). httpxy builds the upstream request without a
 * maxHeaderSize option and shows it to hooks only once its parser is made; the agent sees it
 * before (ClientRequest hands itself to its agent in its constructor).
 */
class RoomyAgent extends Agent {
  // Agent's addRequest is Node's (not in its typings): what every request goes through.
  addRequest(req: ClientRequest, options: unknown): void {
    (req as ClientRequest & { maxHeaderSize?: number }).maxHeaderSize ??= UPSTREAM_MAX_HEADER_BYTES;
    (Agent.prototype as unknown as { addRequest: RoomyAgent['addRequest'] }).addRequest.call(this, req, options);
  }
}

/** The upstream sent nothing for UPSTREAM_TIMEOUT_MS (the proxyReq hook's timer). */
class UpstreamSilent extends Error {
  override readonly name = 'UpstreamSilent';
  readonly code = 'CP_ERR_UPSTREAM_SILENT';
}

function answerUpstreamFailure(
  logger: Logger,
  upstream: Upstream,
  error: Error,
  req: IncomingMessage,
  res: ServerResponse | Socket,
): void {
  const code = (error as NodeJS.ErrnoException).code;
  logger.warn({ reqId: req.id, upstream, code, err: error.message }, 'upstream failed');
  if (!('setHeader' in res) || res.headersSent) {
    res.destroy();
    return;
  }
  const timedOut = code === 'CP_ERR_UPSTREAM_SILENT' || code === 'ETIMEDOUT' || code === 'ESOCKETTIMEDOUT';
  const failure = timedOut
    ? new EdgeRefusal('upstreamTimeout', `the ${upstream} service did not answer in time`)
    : new EdgeRefusal('serviceUnavailable', `the ${upstream} service is unavailable; retry later`);
  res.setHeader('Retry-After', '5');
  if (!req.complete) closeAfterAnswer(req, res);
  sendGatewayError(res, upstream, failure, req.id);
}
