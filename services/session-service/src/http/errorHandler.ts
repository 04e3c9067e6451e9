import type { ErrorRequestHandler } from 'express';
import * as mongodb from 'mongodb';
import type { Logger } from '@cp/logging';
import { codeErrorHandler, mongoUnavailable } from '@cp/service-kit';

/** Error body of /sessions: `{"Code","Message"}`; 4xx of express keep their status as `BadRequest`. */
export function errorHandler(logger: Logger): ErrorRequestHandler {
  return codeErrorHandler(logger, {
    unavailable: {
      database: 'the session database does not answer; retry later',
      cache: 'the session cache does not answer; retry later',
    },
    isDatabaseUnavailable: mongoUnavailable(mongodb),
    clientErrors: 'keepStatus',
  });
}
