import { names, type CodeError, type ContentsError } from './api';

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

/** What to do about each code the API answers (`libs/errors` declares the codes; its test checks that each has one). */
export const HINTS: Record<string, string> = {
  invalidRange: 'the Range or Content-Range header is malformed; this is a client bug',
  missingContentRange: 'PUT needs Content-Range; this is a client bug',
  invalidLimit: 'a listing takes limit 1 to 1000',
  invalidCursor: 'the cursor is not one a listing gave; list again from the start',
  rangePastTotal: 'the file is larger than the total declared for this content; upload it as a new content',
  bodyLengthMismatch: 'the body did not have the length its range names (file changed while uploading?); retry',
  invalidId: 'owner and content ids are UUIDs; check --owner and the content id',
  missingCredentials: 'sign in with `content login` or pass a token',
  malformedCredentials: 'the Authorization header is malformed; sign in again',
  invalidToken: 'the token is expired or not trusted; get a new one',
  bearerNotAccepted: 'this service does not accept Bearer tokens; sign in with `content login`',
  sessionsNotAccepted: 'this service does not accept sessions; pass a Bearer token with --token',
  clientDisconnected: 'the request body broke off before its end; retry (the client does so by itself)',
  partTooFragmented: 'this part was sent in too many small ranges; send the rest of it in larger ranges',
  tooManyRequests: "this owner's request rate is over its limit; wait for Retry-After seconds and send it again",
  storageQuotaExceeded:
    "the content does not fit in this owner's storage quota; delete contents (or unfinished uploads) first, or ask the operator for more",
  uploadQuotaExceeded:
    'this owner holds as many unfinished uploads as its quota allows; complete or delete one (content ls shows them) first',
  invalidContentDigest: 'the Content-Digest header is malformed; this is a client bug',
  contentDigestMismatch: 'the bytes sent are not the ones their digest names (file changed while uploading?); retry',
  invalidSession: 'the session is over; run `content refresh` or `content login` again',
  ownerForbidden: 'these credentials may not act for this owner; check --owner',
  contentNotFound: 'no such content for this owner; check the id and --owner',
  webhookNotFound: 'no such webhook for this owner; list them with `content webhook ls`',
  invalidWebhook: 'the webhook registration is malformed; this is a client bug',
  invalidWebhookUrl: 'the webhook url is not accepted: use https:// to a public address',
  invalidWebhookEvents: 'name one or more of content.completed, content.deleted, content.expired',
  tooManyWebhooks: 'this owner has as many webhooks as allowed; remove one with `content webhook rm`',
  totalConflict: 'the content was started with another size; upload the file as a new content',
  contentNotReady: 'the content is still being uploaded; finish it with `content upload --resume <id>`',
  contentAlreadyComplete: 'the content is complete and holds other bytes; upload the file as a new content',
  rangeOverlap: 'these bytes overlap others already sent; resend exactly the same range, or only missing bytes',
  rangeAlreadyStored: 'these bytes were already received with other content; upload the file as a new content',
  lengthRequired: 'the request had no length; this is a client bug',
  partTooLarge: 'a part may be at most 64 MiB',
  contentTooLarge: 'a content may be at most 30 GiB',
  rangeNotSatisfiable: 'the range starts past the end of the content',
  contentBusy: 'another request is writing this content; retry in a moment (the client does so by itself)',
  invalidContentType: 'the Content-Type is not a plain ASCII media type (type/subtype; name=value); pass a simpler one',
  rangeTotalMismatch: 'the content has another size than the range names; check the content id',
  contentCompleting: 'the content is being completed; retry in a moment (the client does so by itself)',
  partAssembling: 'a part is being assembled; retry in a moment (the client does so by itself)',
  claimLost:
    'the service lost its claim on this part while writing it (a replica stopped or stalled); retry in a moment (the client does so by itself)',
  partWriting: 'another request is writing the same part; retry in a moment (the client does so by itself)',
  databaseUnavailable: 'the content database is unavailable; retry later (resume with --resume if an upload stopped)',
  storageUnavailable: 'the object storage is unavailable; retry later (resume with --resume if an upload stopped)',
  sessionServiceUnavailable: 'sessions cannot be checked right now; retry later',
  identityProviderUnavailable: 'tokens cannot be checked right now; retry later',
  directTransferDisabled: 'this deployment does not offer direct transfer to S3; leave out --direct',
  totalUnknown: "the content's size is not known yet; send a part that names it first (the client does so by itself)",
  uploadRestarted:
    'the object storage lost the parts of this content stored so far; send them again with `content upload --resume <id>` (a file upload does so by itself, up to 3 times)',
  directPartMissing: 'S3 does not hold the part as sent straight to it; send it again (the client does so by itself)',
  invalidDirectParts: 'the direct-parts request is malformed; this is a client bug',
  receiptsNotConfigured: 'this deployment does not sign receipts; ask its operator to configure a signing key',
  internalError: 'the service failed unexpectedly; retry, and quote the track id when reporting it',
  routeNotFound: 'no such endpoint: check --url (it should be the gateway, e.g. http://host:8080)',
  missingHost: 'the request had no Host header; this is a client bug',
  duplicateHost: 'the request had two Host headers; check proxies between the client and the service',
  invalidPath: 'the path is not a clean absolute path; check --url and the ids',
  credentialTooLong: 'a credential (token, sid, api key) is far too long; check what --token or the saved login holds',
  invalidCredential: 'a credential holds characters outside visible ASCII; check --token or the saved login',
  malformedRequest: 'the request was not valid HTTP; check proxies between the client and the service',
  requestTimeout: 'the request went silent for too long; retry (the client does so by itself)',
  chunkExtensionsTooLarge: 'the chunked body was malformed; this is a client bug',
  expectationFailed: 'only `Expect: 100-continue` is supported; this is a client bug',
  headersTooLarge: 'the request headers are too large; check the size of the token and proxies in between',
  serviceUnavailable: 'a service behind the gateway is down or restarting; retry later (the client does so by itself)',
  upstreamTimeout: 'a service behind the gateway did not answer in time; retry (the client does so by itself)',
  BodyTooLarge: 'the request body is too large for this endpoint',
  BadRequest: 'the request could not be read; this is a client bug',
  InvalidParameter: 'a parameter is malformed (e.g. the thumbprint); check the certificate file',
  UnknownError: 'the sign-in service failed unexpectedly; retry, and report it if it persists',
  ServiceUnavailable: 'the service is unavailable; retry later',
  MissingParameters: 'a parameter (api key, certificate, thumbprint or body) is missing',
  InvalidApiKey: 'the api key is unknown; ask the operator for one (`pnpm admin apikey create`)',
  FreeNotAllowed:
    'this api key may not skip certificate validation; sign in without free, or ask the operator for a key made with --allow-free',
  CertUnreadable: 'the file is not a certificate (PEM or DER)',
  UnknownCertificate: 'the certificate is not registered; ask the operator to add it (`pnpm admin user add`)',
  CertNotValid: 'the certificate is expired, not yet valid, or not issued by a trusted CA',
  RndBytesNotFound: 'the sign-in challenge expired or was used; run `content login` again',
  WrongKey: 'the private key does not match the certificate',
  CreateSessionError: 'the session service is unavailable; retry later',
  RefreshTokenReused: 'the refresh token was used already and the session was revoked; run `content login`',
  RefreshTokenExpired: 'the refresh token expired; run `content login`',
  InvalidRefreshToken: 'the refresh token is unknown; run `content login`',
  SessionRevoked: 'the session was revoked; run `content login`',
  SidMismatch: 'the saved session is inconsistent; run `content login`',
  SessionTooOld: 'the sign-in reached its maximum lifetime; run `content login`',
  UserRemoved: 'the user is no longer registered; ask the operator, then run `content login`',
  CertificateRemoved: 'the certificate is no longer registered; ask the operator, then run `content login`',
  NotFound: 'no such sign-in endpoint: check --url (it should be the gateway, e.g. http://host:8080)',
  MethodNotAllowed: 'the sign-in endpoints take POST only; this is a client bug',
  TooManyRequests:
    'too many sign-in requests for this api key or address; retry after the time the service names (the client does so by itself)',
};

const HINTS_BY_STATUS: Record<number, string> = {
  401: 'sign in again',
  403: 'these credentials are not allowed to do this',
  404: 'not found; check the id and --owner',
  409: 'conflicts with what the service has; see the message',
  503: 'the service or its storage is unavailable; retry later',
};
