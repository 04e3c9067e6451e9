import pino, { type DestinationStream, type Logger } from 'pino';
import { HEADERS, headerKey } from '@cp/protocol';

export type { Logger };
export { redactUrl, isSecretParameter, REDACTED } from './redactUrl';

export interface LoggerOptions {
  service: string;
  level?: string;
  /** Where the lines go; stdout when unset. */
  destination?: DestinationStream;
}

/** JSON lines on stdout; every request's lines carry its request id (see service-kit). */
export function createLogger({ service, level = 'info', destination }: LoggerOptions): Logger {
  const options: pino.LoggerOptions = {
    level,
    base: { service },
    timestamp: pino.stdTimeFunctions.isoTime,
    // Headers are never logged by the services; should a request object reach a log line, its
    // credentials do not.
    redact: {
      paths: [
        'req.headers.authorization',
        'req.headers.cookie',
        `req.headers["${headerKey(HEADERS.apiKey)}"]`,
        `req.headers["${headerKey(HEADERS.refreshToken)}"]`,
        'req.headers["x-internal-secret"]',
        'headers.authorization',
        'headers.cookie',
      ],
      censor: '[redacted]',
    },
  };
  return destination ? pino(options, destination) : pino(options);
}
export {
  auditOutcome,
  openAuditLog,
  type AuditActor,
  type AuditEvent,
  type AuditLog,
  type AuditOutcome,
  type AuditRecord,
} from './audit';
export { auditOperatorChange } from './operatorAudit';
