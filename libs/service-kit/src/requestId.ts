import { randomUUID } from 'node:crypto';
import type { RequestHandler } from 'express';
import { HEADERS, headerKey } from '@cp/protocol';

export const REQUEST_ID_HEADER = headerKey(HEADERS.requestId);
const ACCEPTABLE = /^[A-Za-z0-9._:@-]{1,128}$/;

declare module 'http' {
  interface IncomingMessage {
    /** The request id: taken from X-Request-Id when sane, generated otherwise. */
    id: string;
  }
}

/**
 * Accepts a sane X-Request-Id or makes one, writes it back on the request (so a proxy passes it
 * upstream) and on the response.
 */
export function requestId(): RequestHandler {
  return (req, res, next) => {
    const given = req.headers[REQUEST_ID_HEADER];
    const id = typeof given === 'string' && ACCEPTABLE.test(given) ? given : randomUUID();
    req.id = id;
    req.headers[REQUEST_ID_HEADER] = id;
    res.setHeader(HEADERS.requestId, id);
    next();
  };
}
