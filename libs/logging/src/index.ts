import pino, { type Logger } from 'pino';

export type { Logger };

export interface LoggerOptions {
  service: string;
  level?: string;
}

/** JSON lines on stdout; every request's lines carry its request id (see service-kit). */
export function createLogger({ service, level = 'info' }: LoggerOptions): Logger {
  return pino({
    level,
    base: { service },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: {
      paths: ['req.headers.authorization', 'req.headers.cookie', 'req.headers["x-kontur-apikey"]', 'req.headers["x-refresh-token"]'],
      censor: '[redacted]',
    },
  });
}
