import type { ErrorRequestHandler } from 'express';
import type { ServiceError } from '@cp/errors';
import type { Logger } from '@cp/logging';
import { closeAfterAnswer, lingerAfterAnswer } from './lingerAfterAnswer';

export interface JsonErrorHandlerOptions {
  /** Turns anything thrown into the error to answer; unknown errors become a bare 500. */
  toServiceError: (error: unknown) => ServiceError;
  /** The API's error body for that error. */
  body: (error: ServiceError, requestId: string) => unknown;
}

/**
 * Answers errors as JSON in the API's own format. 5xx are logged with the request id; nothing
 * internal reaches the client. A request whose body was not read to its end has the rest of it
 * read and dropped for a bounded time after the answer (lingerAfterAnswer), so that a client still
 * sending gets the answer rather than a reset connection.
 */
export function jsonErrorHandler(logger: Logger, options: JsonErrorHandlerOptions): ErrorRequestHandler {
  return (error: unknown, req, res, _next) => {
    const e = options.toServiceError(error);
    // 501: something this deployment does not offer (receipts without a signing key), not a failure.
    if (e.status === 501)
      logger.info({ reqId: req.id, code: e.code }, 'request for what this deployment does not offer');
    else if (e.status >= 500) logger.error({ reqId: req.id, err: error }, 'request failed');
    if (res.headersSent || req.socket.destroyed) {
      res.destroy();
      return;
    }
    // A request that closes its connection after this answer (the client's Connection: close, or
    // the gateway's proxy, which sends every chunked body so) must close it the lingering way too:
    // Node would destroy the socket as soon as the answer is out, and the reset could beat the answer.
    if (!req.readableEnded) (res.shouldKeepAlive ? lingerAfterAnswer : closeAfterAnswer)(req, res);
    for (const [name, value] of Object.entries(e.headers)) res.setHeader(name, value);
    res
      .status(e.status)
      .type('application/json; charset=utf-8')
      .send(JSON.stringify(options.body(e, req.id)));
  };
}
