import { names, type CodeError, type ContentsError } from './api';
import { HINTS } from './generated/errorHints';

/** An error answer of the API, in either of its formats (/v1 kebab-case or /auth PascalCase). */
export class ApiError extends Error {
  override readonly name = 'ApiError';

  constructor(
    readonly status: number,
    /** `urn:error:contents:<code>` → `<code>`, or the auth/session `Code`. */
    readonly code: string,
    message: string,
    readonly trackId: string | null,
    /** How long the answer asked to wait before trying again (Retry-After, in seconds or as an HTTP date). */
    readonly retryAfterMs: number | null,
  ) {
    super(message);
  }

  /** Retry-After in whole seconds (rounded up), or null. */
  get retryAfterSeconds(): number | null {
    return this.retryAfterMs === null ? null : Math.ceil(this.retryAfterMs / 1000);
  }

  /** What to do about it, in a sentence, for people. */
  get hint(): string {
    return HINTS[this.code] ?? HINTS_BY_STATUS[this.status] ?? 'see the message; quote the track id when reporting it';
  }

  static fromResponse(status: number, body: string, headers: Record<string, string | string[] | undefined>): ApiError {
    let code = `http${status}`;
    let message = body.slice(0, 300) || `HTTP ${status}`;
    let trackId: string | null = null;
    try {
      // Any JSON may come (a proxy's error page): each field is checked before it is used.
      const parsed = JSON.parse(body) as { [K in keyof ContentsError | keyof CodeError]?: unknown };
      if (typeof parsed.id === 'string') code = parsed.id.replace(/^urn:error:contents:/, '');
      if (typeof parsed.Code === 'string') code = parsed.Code;
      if (typeof parsed.message === 'string') message = parsed.message;
      if (typeof parsed.Message === 'string') message = parsed.Message;
      if (typeof parsed['track-id'] === 'string') trackId = parsed['track-id'];
    } catch {
      /* not JSON: keep the text */
    }
    const errorId = headers[names.errorId];
    const requestId = headers[names.requestId];
    if (!body && typeof errorId === 'string') {
      code = errorId.replace(/^urn:error:contents:/, '');
      message = `HTTP ${status} ${code}`;
    }
    return new ApiError(
      status,
      code,
      message,
      trackId ?? (typeof requestId === 'string' ? requestId : null),
      parseRetryAfter(headers),
    );
  }
}

/**
 * Retry-After as milliseconds from now: delay-seconds, or an HTTP date (measured against the
 * answer's own Date header when it has one, so a skewed local clock does not matter).
 */
export function parseRetryAfter(
  headers: Record<string, string | string[] | undefined>,
  now = Date.now(),
): number | null {
  const raw = headers['retry-after'];
  const value = (Array.isArray(raw) ? raw[0] : raw)?.trim();
  if (!value) return null;
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  const at = Date.parse(value);
  if (Number.isNaN(at)) return null;
  const dateHeader = headers.date;
  const sent = Date.parse((Array.isArray(dateHeader) ? dateHeader[0] : dateHeader) ?? '');
  return Math.max(0, at - (Number.isNaN(sent) ? now : sent));
}

/** The connection failed (refused, reset, broke off mid-body), or a local file could not be read or written. */
export class TransportError extends Error {
  override readonly name = 'TransportError';
  /** The system error code when there is one (`ECONNREFUSED`, `ECONNRESET`, `ENOENT` ...), or `ANSWER_BROKE_OFF`. */
  readonly code: string | null;

  constructor(message: string, options?: { cause?: unknown; code?: string | null }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = options?.code ?? (options?.cause as NodeJS.ErrnoException | undefined)?.code ?? null;
  }
}

/**
 * A request kept failing in a retriable way (503, 429, 408, 502, 504, a refused or broken
 * connection) for the whole retry budget. `cause` is the last failure.
 */
export class RetriesExhaustedError extends Error {
  override readonly name = 'RetriesExhaustedError';
  readonly code = 'retriesExhausted';

  constructor(
    /** Why the last attempt failed, for people (`service unavailable (503)`). */
    readonly reason: string,
    /** From the first failure to giving up. */
    readonly retriedForMs: number,
    readonly attempts: number,
    cause: ApiError | TransportError,
  ) {
    super(
      `gave up after retrying for ${formatDuration(retriedForMs)} (${attempts} attempts): ${reason}: ${cause.message}`,
      { cause },
    );
  }

  /** The last answer's status, when the last failure was an answer. */
  get status(): number | null {
    return this.cause instanceof ApiError ? this.cause.status : null;
  }

  get trackId(): string | null {
    return this.cause instanceof ApiError ? this.cause.trackId : null;
  }
}

/** `45s`, `1m52s`, `1h5m`: for messages and the progress line. */
export function formatDuration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${s % 60}s`;
  return `${Math.floor(s / 3600)}h${Math.floor((s % 3600) / 60)}m`;
}

/** The certificate or key file given for sign-in cannot be used (unreadable, not a pair, cannot open the challenge). */
export class CredentialsFileError extends Error {
  override readonly name = 'CredentialsFileError';
}

/** A refresh asked of a client that holds no session to rotate (a Bearer token, or a session saved without its refresh token or api key). */
export class NotRefreshableError extends Error {
  override readonly name = 'NotRefreshableError';
}

/** Bytes that do not match what they should be: a download's length or SHA-256, a stream's announced size. */
export class IntegrityError extends Error {
  override readonly name = 'IntegrityError';
}

/**
 * A receipt that cannot be trusted: not a CMS SignedData, a signature that does not verify (or is
 * not the certificate's given), or a document that names another content or owner than asked.
 */
export class ReceiptError extends Error {
  override readonly name = 'ReceiptError';
}

/**
 * The content is not in the state the command needs, as the client found out itself (not an error
 * answer of the API): a resumed upload whose size differs from the content's, a download of a
 * content still uploading, an upload that sent every part without the content becoming complete.
 */
export class ContentStateError extends Error {
  override readonly name = 'ContentStateError';

  constructor(
    readonly code: 'totalConflict' | 'contentNotReady',
    message: string,
  ) {
    super(message);
  }

  /** What to do about it, in a sentence, for people. */
  get hint(): string {
    return HINTS[this.code]!;
  }
}

/** What to do about each code the API answers: the catalogue's hints (libs/errors), generated. */
export { HINTS };

const HINTS_BY_STATUS: Record<number, string> = {
  401: 'sign in again',
  403: 'these credentials are not allowed to do this',
  404: 'not found; check the id and --owner',
  409: 'conflicts with what the service has; see the message',
  503: 'the service or its storage is unavailable; retry later',
};
