import pino from 'pino';

/** What happened, in the words of the audit trail. */
export type AuditEvent =
  | 'content.create'
  | 'content.complete'
  | 'content.download'
  | 'content.delete'
  | 'webhook.create'
  | 'webhook.delete'
  | 'session.signin'
  | 'session.refresh'
  | `admin.${string}`;

/** `ok`: done; `refused`: the caller's request was turned down (4xx); `failed`: the service could not (5xx, broken off). */
export type AuditOutcome = 'ok' | 'refused' | 'failed';

/** Who acted: a Bearer token's subject, a session's user (and its sign-in certificate), a certificate signing in, an operator. */
export interface AuditActor {
  kind: 'bearer' | 'session' | 'certificate' | 'operator' | 'unknown';
  subject: string | null;
  /** SHA-1 thumbprint (hex) of the certificate that signed in (for sessions and sign-ins). */
  certificate?: string | null;
}

/** One audit record: who did what to which content, from where, in which request, and how it ended. Never a secret. */
export interface AuditRecord {
  event: AuditEvent;
  actor: AuditActor;
  outcome: AuditOutcome;
  owner?: string | null;
  content?: string | null;
  /** The client's address as the request came (the X-Forwarded-For chain, else the peer). */
  from?: string | null;
  requestId?: string | null;
  status?: number;
  /** A few facts of the event (sizes, names): never a token, key or session id. */
  detail?: Record<string, string | number | boolean | null>;
}

export interface AuditLog {
  record(entry: AuditRecord): void;
  close(): void;
}

/**
 * The audit trail: one JSON line per record, on a stream of its own, apart from the service's
 * log. `target`: `stderr` (the default in every service), `stdout`, `off`, or a file path
 * (appended to, its folder made). Lines are written synchronously: a record is on its stream
 * (the kernel's, for a file) before the request's answer is finished being sent. A pipe that is
 * full (its reader lags) is waited for, never an error and never a line dropped (the service's log,
 * unlike this, drops lines past its buffer): a bare write to a non-blocking stderr fails with
 * EAGAIN once 64 KiB wait, which threw out of the request's end and took the process down.
 */
export function openAuditLog(service: string, target: string): AuditLog {
  if (target === 'off') return { record: () => undefined, close: () => undefined };
  const dest = target === 'stderr' ? 2 : target === 'stdout' ? 1 : target;
  // pino's destination (sonic-boom): synchronous writes that retry a full pipe every 100 ms; fds 1 and 2 are never closed.
  const stream = pino.destination({ dest, sync: true, append: true, mkdir: true });
  return {
    record(entry) {
      stream.write(`${JSON.stringify({ time: new Date().toISOString(), audit: entry.event, service, ...entry })}\n`);
    },
    close() {
      if (typeof dest === 'string') stream.end();
    },
  };
}

/** A request's outcome as the audit trail names it, from its status (and whether it was broken off). */
export function auditOutcome(status: number, aborted = false): AuditOutcome {
  if (aborted || status >= 500) return 'failed';
  return status >= 400 ? 'refused' : 'ok';
}
