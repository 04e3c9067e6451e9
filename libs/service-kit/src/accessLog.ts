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
      const line = { reqId: req.id, method: req.method, url: redactedUrl(req.originalUrl), status: res.statusCode, ms: Math.round(ms), outcome };
      if (req.path === '/healthz' || req.path === '/readyz' || req.path === '/metrics') logger.debug(line, 'request');
      else logger.info(line, 'request');
    };
    res.on('finish', () => log('finished'));
    res.on('close', () => log(res.writableFinished ? 'finished' : 'aborted'));
    next();
  };
}

/** Query parameters whose values are secrets (api keys, sids, refresh tokens): never logged. */
const SECRET_PARAM = /key|sid|token|secret|password|signature|credential/i;

/** The URL with the values of secret-looking query parameters replaced by `***`. */
export function redactedUrl(url: string): string {
  const q = url.indexOf('?');
  if (q === -1) return url;
  const query = url
    .slice(q + 1)
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      const name = eq === -1 ? pair : pair.slice(0, eq);
      let decoded = name;
      try {
        decoded = decodeURIComponent(name);
      } catch {
        // a malformed name is logged as sent
      }
      return eq !== -1 && SECRET_PARAM.test(decoded) ? `${name}=***` : pair;
    })
    .join('&');
  return `${url.slice(0, q)}?${query}`;
}
