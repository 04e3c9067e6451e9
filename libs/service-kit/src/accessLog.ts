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
      const line = { reqId: req.id, method: req.method, url: withoutSecrets(req.originalUrl), status: res.statusCode, ms: Math.round(ms), outcome };
      if (req.path === '/healthz' || req.path === '/readyz' || req.path === '/metrics') logger.debug(line, 'request');
      else logger.info(line, 'request');
    };
    res.on('finish', () => log('finished'));
    res.on('close', () => log(res.writableFinished ? 'finished' : 'aborted'));
    next();
  };
}

// Query parameters that carry credentials (sid, refresh token, api key): never written to a log.
const SECRET_PARAM = /^(auth\.sid|sid|refresh-?token|api-?key)$/i;

/** The URL as logged: the values of credential-bearing query parameters replaced. */
export function withoutSecrets(url: string): string {
  const q = url.indexOf('?');
  if (q < 0) return url;
  const query = url
    .slice(q + 1)
    .split('&')
    .map((part) => {
      const eq = part.indexOf('=');
      let name = eq < 0 ? part : part.slice(0, eq);
      try {
        name = decodeURIComponent(name.replace(/\+/g, ' '));
      } catch {
        return part;
      }
      return eq >= 0 && SECRET_PARAM.test(name) ? `${part.slice(0, eq)}=[redacted]` : part;
    })
    .join('&');
  return `${url.slice(0, q)}?${query}`;
}
