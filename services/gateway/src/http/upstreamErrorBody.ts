import type { ServerResponse } from 'node:http';
import { contentsErrorBody, type ErrorCode } from '@cp/errors';
import { HEADERS } from '@cp/protocol';
import type { Upstream } from './routes';

/** An error answered by the gateway itself, in the error format of the API the path belongs to. */
export function gatewayErrorBody(
  upstream: Upstream | null,
  status: number,
  code: ErrorCode,
  message: string,
  trackId: string,
): unknown {
  if (upstream === 'auth' || upstream === 'sessions')
    return { Code: code.charAt(0).toUpperCase() + code.slice(1), Message: message };
  return contentsErrorBody(status, code, message, trackId);
}

/** The X-Error-Id every /v1 error carries (as the content-service's errorHandler sets it); null for the legacy APIs. */
export function gatewayErrorId(upstream: Upstream | null, code: ErrorCode): string | null {
  return upstream === 'auth' || upstream === 'sessions' ? null : `urn:error:contents:${code}`;
}

/**
 * Answers a request with an error of the gateway's own: status, JSON body and, on /v1, X-Error-Id.
 * `done` runs once the answer is written.
 */
export function sendGatewayError(
  res: ServerResponse,
  upstream: Upstream | null,
  refusal: { status: number; code: ErrorCode; message: string },
  trackId: string,
  done?: () => void,
): void {
  res.statusCode = refusal.status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  const errorId = gatewayErrorId(upstream, refusal.code);
  if (errorId) res.setHeader(HEADERS.errorId, errorId);
  res.end(JSON.stringify(gatewayErrorBody(upstream, refusal.status, refusal.code, refusal.message, trackId)), done);
}
