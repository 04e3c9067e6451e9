import type { ErrorRequestHandler } from 'express';
import { MongoNetworkError, MongoServerSelectionError, MongoNotConnectedError } from 'mongodb';
import { contentsErrorBody, ServiceError } from '@cp/errors';
import type { Logger } from '@cp/logging';
import { RangeSyntaxError } from '@cp/ranges';
import { isS3Unavailable } from '../store/ObjectStore';
import { BodyLengthMismatch } from '../uploads/ExactLengthStream';
import { ClientDisconnected } from '../uploads/exactBody';

/** Maps anything thrown on /v1 to the SPEC §2.5 error body; internals never reach the client. */
export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (error: unknown, req, res, _next) => {
    const e = toServiceError(error);
    if (e.status >= 500) logger.error({ reqId: req.id, err: error }, 'request failed');
    else if (!(error instanceof ServiceError)) logger.info({ reqId: req.id, code: e.code, err: error }, 'request refused');
    if (res.headersSent || req.socket.destroyed) {
      res.destroy();
      return;
    }
    // A body we did not read to its end: close the connection instead of draining it.
    if (!req.readableEnded) res.setHeader('Connection', 'close');
    for (const [name, value] of Object.entries(e.headers)) res.setHeader(name, value);
    res.status(e.status).type('application/json; charset=utf-8').send(JSON.stringify(contentsErrorBody(e.status, e.code, e.message, req.id)));
  };
}

function toServiceError(error: unknown): ServiceError {
  if (error instanceof ServiceError) return error;
  if (error instanceof RangeSyntaxError) return ServiceError.badRequest('invalidRange', error.message);
  if (error instanceof BodyLengthMismatch) return ServiceError.badRequest('bodyLengthMismatch', error.message);
  if (error instanceof ClientDisconnected) return ServiceError.badRequest('clientDisconnected', error.message);
  if (error instanceof MongoServerSelectionError || error instanceof MongoNetworkError || error instanceof MongoNotConnectedError) {
    return ServiceError.unavailable('databaseUnavailable', 'the content database does not answer; retry later', error);
  }
  if (isS3Unavailable(error)) return ServiceError.unavailable('storageUnavailable', 'the object storage does not answer; retry later', error);
  return new ServiceError(500, 'internalError', 'the request failed unexpectedly; quote the track-id when reporting it');
}
