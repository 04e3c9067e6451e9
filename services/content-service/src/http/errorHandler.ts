import type { ErrorRequestHandler } from 'express';
import { MongoNetworkError, MongoServerSelectionError, MongoNotConnectedError, MongoOperationTimeoutError } from 'mongodb';
import { contentsErrorBody, ServiceError } from '@cp/errors';
import type { Logger } from '@cp/logging';
import { jsonErrorHandler } from '@cp/service-kit';
import { RangeSyntaxError } from '@cp/ranges';
import { isS3Unavailable } from '../store/ObjectStore';
import { BodyLengthMismatch } from '../uploads/ExactLengthStream';
import { ClientDisconnected } from '../uploads/exactBody';

/** Maps anything thrown on /v1 to the /v1 error body; internals never reach the client. */
export function errorHandler(logger: Logger): ErrorRequestHandler {
  const handler = jsonErrorHandler(logger, { toServiceError, body: (e, trackId) => contentsErrorBody(e.status, e.code, e.message, trackId) });
  return (error: unknown, req, res, next) => {
    const e = toServiceError(error);
    // Refusals the service did not raise itself (a broken body, a bad header) are worth a line too.
    if (!(error instanceof ServiceError) && e.status < 500) logger.info({ reqId: req.id, err: error }, 'request refused');
    // HEAD answers carry no body: the error's id travels in a header as well.
    if (!res.headersSent) res.setHeader('X-Error-Id', `urn:error:contents:${e.code}`);
    handler(error, req, res, next);
  };
}

function toServiceError(error: unknown): ServiceError {
  if (error instanceof ServiceError) return error;
  // The router's own refusal of a path segment it cannot percent-decode (e.g. `%E0%A4%A`).
  if (error instanceof URIError) return ServiceError.badRequest('invalidId', 'the path holds a malformed percent-encoding where a UUID belongs');
  if (error instanceof RangeSyntaxError) return ServiceError.badRequest('invalidRange', error.message);
  if (error instanceof BodyLengthMismatch) return ServiceError.badRequest('bodyLengthMismatch', error.message);
  if (error instanceof ClientDisconnected) return ServiceError.badRequest('clientDisconnected', error.message);
  if (error instanceof MongoServerSelectionError || error instanceof MongoNetworkError || error instanceof MongoNotConnectedError || isMongoTimeout(error)) {
    return ServiceError.unavailable('databaseUnavailable', 'the content database does not answer; retry later', error);
  }
  if (isS3Unavailable(error)) return ServiceError.unavailable('storageUnavailable', 'the object storage does not answer; retry later', error);
  return new ServiceError(500, 'internalError', 'the request failed unexpectedly; quote the track-id when reporting it');
}

/** The driver's own deadlines (a full connection pool, an operation timeout): MongoDB is too slow to serve now. */
function isMongoTimeout(error: unknown): boolean {
  return error instanceof MongoOperationTimeoutError || (error as Error | null)?.name === 'MongoWaitQueueTimeoutError';
}
