import type { RequestHandler } from 'express';
import { type Logger, redactUrl } from '@cp/logging';
import { traceLogFields } from '@cp/tracing';
import { whenDone } from './whenDone';

/** One JSON line per finished (or aborted) request, with its request id; credentials in the query are masked. */
export function accessLog(logger: Logger): RequestHandler {
  return (req, res, next) => {
    const started = process.hrtime.bigint();
    // The request's span (when tracing), named here: the line is written after the answer, outside it.
    const traced = traceLogFields();
    let logged = false;
    const log = (outcome: 'finished' | 'aborted') => {
      if (logged) return;
      logged = true;
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      const line = {
        ...traced,
        reqId: req.id,
        method: req.method,
        url: redactUrl(req.originalUrl),
        status: res.statusCode,
        ms: Math.round(ms),
        outcome,
      };
      if (req.path === '/healthz' || req.path === '/readyz' || req.path === '/metrics') logger.debug(line, 'request');
      else logger.info(line, 'request');
    };
    whenDone(res, (finished) => log(finished ? 'finished' : 'aborted'));
    next();
  };
}
