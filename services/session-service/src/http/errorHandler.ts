import type { ErrorRequestHandler } from 'express';
import { MongoNetworkError, MongoNotConnectedError, MongoServerSelectionError, MongoOperationTimeoutError } from 'mongodb';
import { ServiceError } from '@cp/errors';
import type { Logger } from '@cp/logging';
import { jsonErrorHandler } from '@cp/service-kit';
import { RedisUnavailable } from '@cp/redis';

/** Error body of /auth and /sessions: `{"Code","Message"}`; nothing internal reaches the client. */
export function errorHandler(logger: Logger): ErrorRequestHandler {
  return jsonErrorHandler(logger, { toServiceError, body: (e) => ({ Code: e.code, Message: e.message }) });
}

function toServiceError(error: unknown): ServiceError {
  if (error instanceof ServiceError) return error;
  if (error instanceof MongoServerSelectionError || error instanceof MongoNetworkError || error instanceof MongoNotConnectedError || isMongoTimeout(error)) {
    return ServiceError.unavailable('ServiceUnavailable', 'the session database does not answer; retry later', error);
  }
  if (error instanceof RedisUnavailable) return ServiceError.unavailable('ServiceUnavailable', 'the session cache does not answer; retry later', error);
  const status = (error as { status?: unknown })?.status;
  if (typeof status === 'number' && status >= 400 && status < 500) return new ServiceError(status, 'BadRequest', 'the request could not be read');
  return new ServiceError(500, 'UnknownError', 'the request failed unexpectedly');
}

/** The driver's own deadlines (a full connection pool, an operation timeout): MongoDB is too slow to serve now. */
function isMongoTimeout(error: unknown): boolean {
  return error instanceof MongoOperationTimeoutError || (error as Error | null)?.name === 'MongoWaitQueueTimeoutError';
}
