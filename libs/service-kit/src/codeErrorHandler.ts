import type { ErrorRequestHandler } from 'express';
import { ServiceError } from '@cp/errors';
import type { Logger } from '@cp/logging';
import { jsonErrorHandler } from './jsonErrorHandler';
import { unavailableDependency } from './unavailableDependency';

export interface CodeErrorHandlerOptions {
  /** The 503 `ServiceUnavailable` message when MongoDB or Redis does not answer. */
  unavailable: { database: string; cache: string };
  /** Whether an error says MongoDB does not answer: `mongoUnavailable` of the service's driver. */
  isDatabaseUnavailable: (error: unknown) => boolean;
  /**
   * A 4xx the request itself caused (express, body parsers): `as400` answers 400 `BadRequest`,
   * except an oversized body, 413 `BodyTooLarge`; `keepStatus` answers `BadRequest` with the
   * error's own status.
   */
  clientErrors: 'as400' | 'keepStatus';
}

/**
 * Error handler of /auth and /sessions: the body is `{"Code","Message"}`; nothing internal
 * reaches the client.
 */
export function codeErrorHandler(logger: Logger, options: CodeErrorHandlerOptions): ErrorRequestHandler {
  const toServiceError = (error: unknown): ServiceError => {
    if (error instanceof ServiceError) return error;
    const dependency = unavailableDependency(error, { database: options.isDatabaseUnavailable });
    if (dependency === 'database')
      return ServiceError.of('ServiceUnavailable', options.unavailable.database, { cause: error });
    if (dependency === 'cache')
      return ServiceError.of('ServiceUnavailable', options.unavailable.cache, { cause: error });
    const status = (error as { status?: unknown } | null)?.status;
    if (typeof status === 'number' && status >= 400 && status < 500) {
      if (options.clientErrors === 'keepStatus') return ServiceError.of('BadRequest', undefined, { status });
      return status === 413 ? ServiceError.of('BodyTooLarge') : ServiceError.of('BadRequest');
    }
    return ServiceError.of('UnknownError');
  };
  return jsonErrorHandler(logger, { toServiceError, body: (e) => ({ Code: e.code, Message: e.message }) });
}
