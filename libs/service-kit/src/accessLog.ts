import type { RequestHandler } from 'express';
import type { Logger } from '@cp/logging';

/** One JSON line per finished (or aborted) request, with its request id. */
export function accessLog(logger: Logger): RequestHandler {
  return (req, res, next) => {
    const started = process.hrtime.bigint();
    let logged = false;
    const log = (outcome: 'finished' | 'aborted') => {
      if (logged) return;
      logged = true;
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      const line = { reqId: req.id, method: req.method, url: loggableUrl(req.originalUrl), status: res.statusCode, ms: Math.round(ms), outcome };
      if (req.path === '/healthz' || req.path === '/readyz' || req.path === '/metrics') logger.debug(line, 'request');
      else logger.info(line, 'request');
    };
    res.on('finish', () => log('finished'));
    res.on('close', () => log(res.writableFinished ? 'finished' : 'aborted'));
    next();
  };
}

// Query parameters that carry credentials: api keys, sids, refresh tokens (sent in the query by
// the legacy clients) never reach the log.
const CREDENTIAL_PARAMETER = /key|sid|token|secret|password/i;

/** The URL with the values of credential-carrying query parameters replaced. */
export function loggableUrl(url: string): string {
  const q = url.indexOf('?');
  if (q < 0) return url;
  const params = url
    .slice(q + 1)
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      const name = eq < 0 ? pair : pair.slice(0, eq);
      let decoded = name;
      try {
        decoded = decodeURIComponent(name.replace(/\+/g, ' '));
      } catch {
        /* a malformed escape: judge the raw name */
      }
      return eq >= 0 && CREDENTIAL_PARAMETER.test(decoded) ? `${name}=[redacted]` : pair;
    });
  return `${url.slice(0, q + 1)}${params.join('&')}`;
}
