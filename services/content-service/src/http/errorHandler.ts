import type { ErrorRequestHandler } from 'express';
import { contentsErrorBody, ServiceError } from '@cp/errors';
import type { Logger } from '@cp/logging';
import { jsonErrorHandler, unavailableDependency } from '@cp/service-kit';
import { DigestSyntaxError, HEADERS, RangeSyntaxError } from '@cp/protocol';
import { ChecksumRefused, isS3Unavailable } from '../store/ObjectStore';
import { BodyLengthMismatch, ClientDisconnected, DigestMismatch } from '../uploads/ExactLengthStream';

/** Maps anything thrown on /v1 to the /v1 error body; internals never reach the client. */
export function errorHandler(logger: Logger): ErrorRequestHandler {
  const handler = jsonErrorHandler(logger, {
    toServiceError,
    body: (e, trackId) => contentsErrorBody(e.status, e.code, e.message, trackId),
  });
  return (error: unknown, req, res, next) => {
    const e = toServiceError(error);
    // Refusals the service did not raise itself (a broken body, a bad header) are worth a line too.
    if (!(error instanceof ServiceError) && e.status < 500)
      logger.info({ reqId: req.id, err: error }, 'request refused');
    // HEAD answers carry no body: the error's id travels in a header as well.
    if (!res.headersSent) res.setHeader(HEADERS.errorId, `urn:error:contents:${e.code}`);
    handler(error, req, res, next);
  };
}

function toServiceError(error: unknown): ServiceError {
  if (error instanceof ServiceError) return error;
  // The router's own refusal of a path segment it cannot percent-decode (e.g. `%E0%A4%A`).
  if (error instanceof URIError)
    return ServiceError.of('invalidId', 'the path holds a malformed percent-encoding where a UUID belongs');
  if (error instanceof RangeSyntaxError) return ServiceError.of('invalidRange', error.message);
  if (error instanceof BodyLengthMismatch) return ServiceError.of('bodyLengthMismatch', error.message);
  if (error instanceof DigestMismatch) return ServiceError.of('contentDigestMismatch', error.message);
  if (error instanceof ChecksumRefused)
    return error.ofClient
      ? ServiceError.of('contentDigestMismatch', error.message)
      : ServiceError.of('storageUnavailable', undefined, { cause: error });
  if (error instanceof DigestSyntaxError) return ServiceError.of('invalidContentDigest', error.message);
  if (error instanceof ClientDisconnected) return ServiceError.of('clientDisconnected', error.message);
  // Redis keeps the unfinished uploads: its outage is the upload database's (the sid cache's own
  // failures never get here: CachedSessionValidator asks the session-service instead).
  const dependency = unavailableDependency(error, { storage: isS3Unavailable });
  if (dependency === 'cache') return ServiceError.of('databaseUnavailable', undefined, { cause: error });
  if (dependency === 'storage') return ServiceError.of('storageUnavailable', undefined, { cause: error });
  return ServiceError.of('internalError');
}
