import { contentsErrorBody, ERROR_CATALOGUE, type ErrorCode } from '@cp/errors';
import type { Upstream } from './routes';

/** The status of a catalogued code. */
export function statusOf(code: ErrorCode): number {
  return ERROR_CATALOGUE[code].status;
}

/** An error answered by the gateway itself, in the error format of the API the path belongs to. */
export function gatewayErrorBody(upstream: Upstream | null, status: number, code: ErrorCode, message: string, trackId: string): unknown {
  if (upstream === 'auth' || upstream === 'sessions') return { Code: code.charAt(0).toUpperCase() + code.slice(1), Message: message };
  return contentsErrorBody(status, code, message, trackId);
}
