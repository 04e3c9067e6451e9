import { contentsErrorBody, type ErrorCode } from '@cp/errors';
import type { Upstream } from './routes';

/** An error answered by the gateway itself, in the error format of the API the path belongs to. */
export function gatewayErrorBody(upstream: Upstream | null, status: number, code: ErrorCode, message: string, trackId: string): unknown {
  if (upstream === 'auth' || upstream === 'sessions') return { Code: code.charAt(0).toUpperCase() + code.slice(1), Message: message };
  return contentsErrorBody(status, code, message, trackId);
}
