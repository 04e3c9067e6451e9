import pino, { type DestinationStream, type Logger } from 'pino';
import { HEADERS, headerKey } from '@cp/protocol';

export type { Logger };
export { redactUrl, isSecretParameter, REDACTED } from './redactUrl';

export interface LoggerOptions {
  service: string;
  level?: string;
  /** Where the lines go; stdout when unset. */
  destination?: DestinationStream;
  /** On stdout: how many bytes of lines wait for a reader that falls behind before new lines are dropped. */
  bufferBytes?: number;
  /** Fields added to every line (the active span's ids, see @cp/tracing's traceLogFields). */
  mixin?: () => Record<string, unknown>;
}

/** Lines held while stdout's reader falls behind (a full pipe); past this, lines are dropped, not memory grown. */
export const LOG_BUFFER_BYTES = 16 * 1024 * 1024;

/** JSON lines on stdout; every request's lines carry its request id (see service-kit). */
export function createLogger({
  service,
  level = 'info',
  destination,
  bufferBytes = LOG_BUFFER_BYTES,
  mixin,
}: LoggerOptions): Logger {
  const options: pino.LoggerOptions = {
    level,
    ...(mixin ? { mixin } : {}),
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
  // Written as the pipe takes them (pino's default), but held up to `bufferBytes` only, where pino's default holds all.
  return pino(options, destination ?? pino.destination({ dest: 1, sync: false, minLength: 0, maxLength: bufferBytes }));
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
