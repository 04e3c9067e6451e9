import type { ErrorRequestHandler } from 'express';
import * as mongodb from 'mongodb';
import type { Logger } from '@cp/logging';
import { codeErrorHandler, mongoUnavailable } from '@cp/service-kit';

/** Error body of /auth: `{"Code","Message"}`; a body over the limit is 413 `BodyTooLarge`, other 4xx of express 400. */
export function errorHandler(logger: Logger): ErrorRequestHandler {
  return codeErrorHandler(logger, {
    unavailable: {
      database: 'the user registry does not answer; retry later',
      cache: 'the challenge store does not answer; retry later',
    },
    isDatabaseUnavailable: mongoUnavailable(mongodb),
    clientErrors: 'as400',
  });
}
