import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import type { Request, RequestHandler } from 'express';
import { HEADERS } from '@cp/protocol';
import { closeAfterAnswer } from '@cp/service-kit';

/**
 * Cross-origin access for browsers, decided at the gateway alone: off unless the operator names
 * origins. A preflight (OPTIONS with Origin and Access-Control-Request-Method) is answered here and
 * reaches no service; a request from an allowed origin gets its grant and the headers a page may
 * read; one from any other origin is passed on exactly as it came, and its answer grants nothing.
 */
export interface CorsPolicy {
  /** Serialized origins (`https://app.example.com`), or `*` for any origin. */
  origins: readonly string[];
  /** How long a browser may keep a preflight's answer (Access-Control-Max-Age). */
  maxAgeSeconds: number;
  /** Whether cookies (the `auth.sid` cookie) may go with cross-origin requests; never with `*`. */
  allowCredentials: boolean;
}

export const CORS_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;

/** What a page may send beyond the CORS-safelisted headers: this API's, and the resumable-upload protocols'. */
export const CORS_REQUEST_HEADERS = [
  'Authorization',
  'Content-Type',
  HEADERS.contentRange,
  HEADERS.contentDigest,
  HEADERS.reprDigest,
  HEADERS.range,
  'Prefer',
  'If-Match',
  'If-None-Match',
  HEADERS.apiKey,
  HEADERS.refreshToken,
  HEADERS.requestId,
  'traceparent',
  'tracestate',
  'Tus-Resumable',
  'Upload-Length',
  'Upload-Offset',
  'Upload-Metadata',
  'Upload-Defer-Length',
  'Upload-Concat',
  'Upload-Checksum',
  'Upload-Complete',
  'Upload-Draft-Interop-Version',
  'X-HTTP-Method-Override',
] as const;

/** What a page may read of an answer beyond the CORS-safelisted headers. */
export const CORS_EXPOSED_HEADERS = [
  'Location',
  'ETag',
  HEADERS.reprDigest,
  HEADERS.contentRange,
  'Accept-Ranges',
  'Content-Disposition',
  'Preference-Applied',
  'Retry-After',
  HEADERS.requestId,
  HEADERS.errorId,
  HEADERS.uploadState,
  HEADERS.contentTotal,
  HEADERS.receivedRanges,
  'Tus-Resumable',
  'Tus-Version',
  'Tus-Extension',
  'Tus-Max-Size',
  'Tus-Checksum-Algorithm',
  'Upload-Offset',
  'Upload-Length',
  'Upload-Expires',
  'Upload-Metadata',
  'Upload-Defer-Length',
  'Upload-Concat',
  'Upload-Limit',
  'Upload-Complete',
  'Upload-Draft-Interop-Version',
] as const;

const REQUEST_HEADERS = CORS_REQUEST_HEADERS.join(', ');
const EXPOSED_HEADERS = CORS_EXPOSED_HEADERS.join(', ');
const METHODS = CORS_METHODS.join(', ');

/** Why a CORS_ALLOWED_ORIGINS entry is refused, or null when it is a serialized origin or `*`. */
export function originEntryProblem(entry: string): string | null {
  if (entry === '*') return null;
  let url: URL;
  try {
    url = new URL(entry);
  } catch {
    return 'is not an origin (scheme://host[:port])';
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'must be an http or https origin';
  if (url.origin !== entry) return `must be written as its origin, ${url.origin} (no path, no trailing slash)`;
  return null;
}

/** The grant a request's Origin gets: the origin echoed back, or null for none. */
export function allowedOrigin(policy: CorsPolicy, origin: string | undefined): string | null {
  if (origin === undefined || origin === '' || origin.length > 2048) return null;
  if (policy.origins.includes(origin)) return origin;
  // `*` answers with the caller's own origin (not "*"), so that one Vary: Origin rule holds for all.
  if (policy.origins.includes('*') && originEntryProblem(origin) === null) return origin;
  return null;
}

/** Whether a request is a CORS preflight (Fetch standard: OPTIONS with Origin and Access-Control-Request-Method). */
export function isPreflight(req: Pick<Request, 'method' | 'headers'>): boolean {
  return (
    req.method === 'OPTIONS' &&
    req.headers.origin !== undefined &&
    req.headers['access-control-request-method'] !== undefined
  );
}

/** `value` with `names` added to its comma-separated list (case-insensitively, each once). */
export function withVary(value: string | string[] | number | undefined, names: readonly string[]): string {
  const present = (Array.isArray(value) ? value.join(',') : String(value ?? ''))
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (present.includes('*')) return '*';
  const lower = new Set(present.map((s) => s.toLowerCase()));
  for (const name of names) if (!lower.has(name.toLowerCase())) present.push(name);
  return present.join(', ');
}

/**
 * The middleware: answers preflights, and on every other request sets what the gateway's own
 * answers carry (errors, docs); proxied answers get theirs from `corsOnUpstreamAnswer`.
 */
export function corsMiddleware(policy: CorsPolicy): RequestHandler {
  return (req, res, next) => {
    const origin = allowedOrigin(policy, req.headers.origin);
    if (isPreflight(req)) {
      res.setHeader(
        'Vary',
        withVary(undefined, ['Origin', 'Access-Control-Request-Method', 'Access-Control-Request-Headers']),
      );
      if (origin !== null) {
        grant(res, policy, origin);
        res.setHeader('Access-Control-Allow-Methods', METHODS);
        res.setHeader('Access-Control-Allow-Headers', REQUEST_HEADERS);
        res.setHeader('Access-Control-Max-Age', String(policy.maxAgeSeconds));
      }
      // A preflight has no body; one that comes with a body anyway is answered, and its body read
      // and dropped for a bounded time, on a connection that then closes (as every refusal's).
      if (req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) !== 0)
        closeAfterAnswer(req, res);
      res.statusCode = 204;
      res.end();
      return;
    }
    res.setHeader('Vary', withVary(res.getHeader('Vary'), ['Origin']));
    if (origin !== null) {
      grant(res, policy, origin);
      res.setHeader('Access-Control-Expose-Headers', EXPOSED_HEADERS);
    }
    next();
  };
}

/**
 * A service's answer on its way to the client: whatever access-control headers it carries are
 * dropped, CORS on or off (only the gateway grants); with CORS on, Origin joins its Vary, which
 * replaces the gateway's.
 */
export function corsOnUpstreamAnswer(headers: IncomingHttpHeaders, corsOn: boolean): void {
  for (const name of Object.keys(headers)) if (name.startsWith('access-control-')) delete headers[name];
  if (corsOn) headers.vary = withVary(headers.vary, ['Origin']);
}

function grant(res: ServerResponse, policy: CorsPolicy, origin: string): void {
  res.setHeader('Access-Control-Allow-Origin', origin);
  if (policy.allowCredentials) res.setHeader('Access-Control-Allow-Credentials', 'true');
}
