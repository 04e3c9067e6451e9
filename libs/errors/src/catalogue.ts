/**
 * Every error code the platform answers with, each declared once with its status and default
 * message. Throw sites name the code (`ServiceError.of('contentNotFound', detail)`), so a code that
 * is not here does not compile; `libs/errors/test/catalogue.test.ts` checks that every code used
 * is here, in openapi.yaml and in the client's hints.
 *
 * Families (they decide the body, not the code's spelling):
 * - `contents`: the /v1 API, camelCase, body `{"id":"urn:error:contents:<code>",...}`.
 * - `signin`: /auth and /sessions, PascalCase, body `{"Code","Message"}`.
 * - `gateway`: the gateway's own refusals, camelCase; on /v1 as `contents`, on /auth and
 *   /sessions as `signin` with the first letter capitalised (`credentialTooLong` →
 *   `CredentialTooLong`).
 * `internal` codes are answered only on /internal/* routes between services (never routed by
 * the gateway, so not in openapi.yaml nor the client's hints).
 */
export interface ErrorSpec {
  readonly status: number;
  readonly family: 'contents' | 'signin' | 'gateway';
  /** Used when the throw site gives no more specific message. */
  readonly message: string;
  /** 503s carry Retry-After: this many seconds (5 unless said otherwise). */
  readonly retryAfterSeconds?: number;
  readonly internal?: true;
}

export const ERROR_CATALOGUE = {
  // ---- /v1 (content-service) ----
  invalidId: { status: 400, family: 'contents', message: 'the owner or content id is not a UUID' },
  invalidRange: { status: 400, family: 'contents', message: 'the Range or Content-Range header is not a byte range' },
  missingContentRange: {
    status: 400,
    family: 'contents',
    message: 'PUT needs Content-Range: bytes a-b/total (or bytes a-b/*)',
  },
  invalidLimit: {
    status: 400,
    family: 'contents',
    message: 'limit must be a whole number from 1 to 1000',
  },
  invalidCursor: {
    status: 400,
    family: 'contents',
    message: 'the cursor is not one a listing gave; start again without it',
  },
  rangePastTotal: { status: 400, family: 'contents', message: "Content-Range ends past the content's total" },
  bodyLengthMismatch: { status: 400, family: 'contents', message: 'the body does not have the length its range names' },
  clientDisconnected: { status: 400, family: 'contents', message: 'the request body broke off before its end' },
  invalidContentDigest: {
    status: 400,
    family: 'contents',
    message: 'Content-Digest must be an RFC 9530 dictionary such as sha-256=:<base64>:',
  },
  contentDigestMismatch: {
    status: 400,
    family: 'contents',
    message: 'the body does not have the digest its Content-Digest names; nothing of it was kept',
  },
  invalidContentType: {
    status: 400,
    family: 'contents',
    message: 'Content-Type must be an ASCII media type (type/subtype; parameters)',
  },
  missingCredentials: {
    status: 401,
    family: 'contents',
    message: 'send Authorization: Bearer <token> or an auth.sid session',
  },
  malformedCredentials: { status: 401, family: 'contents', message: 'the credentials are malformed' },
  bearerNotAccepted: { status: 401, family: 'contents', message: 'this deployment does not accept Bearer tokens' },
  invalidToken: { status: 401, family: 'contents', message: 'the token is not valid' },
  sessionsNotAccepted: {
    status: 401,
    family: 'contents',
    message: 'this deployment does not accept auth.sid sessions',
  },
  invalidSession: { status: 401, family: 'contents', message: 'the session is unknown, expired or revoked' },
  ownerForbidden: { status: 403, family: 'contents', message: 'these credentials may not act for this owner' },
  contentNotFound: { status: 404, family: 'contents', message: 'there is no such content' },
  routeNotFound: { status: 404, family: 'contents', message: 'no route for this method and path' },
  contentNotReady: {
    status: 409,
    family: 'contents',
    message: 'the content is still being uploaded; it can be downloaded once all its parts are in',
  },
  totalConflict: { status: 409, family: 'contents', message: "the total differs from the content's" },
  rangeOverlap: {
    status: 409,
    family: 'contents',
    message: 'these bytes partly overlap bytes already received; resend exactly the same range or only missing bytes',
  },
  rangeAlreadyStored: {
    status: 409,
    family: 'contents',
    message: 'these bytes were already received with other content and are assembled into their part',
  },
  contentAlreadyComplete: {
    status: 409,
    family: 'contents',
    message: 'the content is complete and these bytes differ from the stored ones',
  },
  lengthRequired: { status: 411, family: 'contents', message: 'send Content-Length (or a chunked body)' },
  partTooLarge: { status: 413, family: 'contents', message: 'a part may carry at most 64 MiB' },
  contentTooLarge: { status: 413, family: 'contents', message: 'a content may be at most 30 GiB' },
  partTooFragmented: {
    status: 409,
    family: 'contents',
    message: 'this 64 MiB part already holds the most ranges it may be sent in; send the rest of it in larger ranges',
  },
  rangeNotSatisfiable: { status: 416, family: 'contents', message: 'the range starts past the end of the content' },
  rangeTotalMismatch: { status: 416, family: 'contents', message: "the range names a total other than the content's" },
  internalError: {
    status: 500,
    family: 'contents',
    message: 'the request failed unexpectedly; quote the track-id when reporting it',
  },
  tooManyRequests: {
    status: 429,
    family: 'contents',
    message: "too many requests for this owner; retry after the answer's Retry-After seconds",
  },
  receiptsNotConfigured: {
    status: 501,
    family: 'contents',
    message: 'this deployment does not sign receipts: the content-service has no signing key and certificate',
  },
  identityProviderUnavailable: {
    status: 503,
    family: 'contents',
    message: 'the token issuer keys could not be fetched',
  },
  sessionServiceUnavailable: {
    status: 503,
    family: 'contents',
    message: 'the session service does not answer; retry later',
  },
  databaseUnavailable: {
    status: 503,
    family: 'contents',
    message: 'the content database does not answer; retry later',
  },
  invalidWebhook: { status: 400, family: 'contents', message: 'the body must be a JSON object {"url","events"}' },
  invalidWebhookUrl: {
    status: 400,
    family: 'contents',
    message: 'the webhook url is not accepted: https to a public address, of at most 2048 characters',
  },
  invalidWebhookEvents: {
    status: 400,
    family: 'contents',
    message: 'events must be a non-empty list of content.completed, content.deleted, content.expired',
  },
  webhookNotFound: { status: 404, family: 'contents', message: 'there is no such webhook' },
  tooManyWebhooks: {
    status: 409,
    family: 'contents',
    message: 'the owner has as many webhooks as allowed; delete one first',
  },
  storageUnavailable: { status: 503, family: 'contents', message: 'the object storage does not answer; retry later' },
  contentBusy: {
    status: 503,
    family: 'contents',
    message: 'the content is busy with other requests; retry in a moment',
    retryAfterSeconds: 1,
  },
  contentCompleting: {
    status: 503,
    family: 'contents',
    message: 'the content is being completed right now; retry in a moment',
    retryAfterSeconds: 1,
  },
  partAssembling: {
    status: 503,
    family: 'contents',
    message: 'the part these bytes belong to is being assembled right now; retry in a moment',
    retryAfterSeconds: 1,
  },
  partWriting: {
    status: 503,
    family: 'contents',
    message: 'the part these bytes belong to is being written by another request right now; retry in a moment',
    retryAfterSeconds: 1,
  },
  claimLost: {
    status: 503,
    family: 'contents',
    message: 'this request lost its claim (taken over, or the database did not answer in time); send it again',
    retryAfterSeconds: 1,
  },

  // ---- the gateway's own (before or instead of routing) ----
  missingHost: { status: 400, family: 'gateway', message: 'an HTTP/1.1 request needs one Host header' },
  duplicateHost: { status: 400, family: 'gateway', message: 'a request may carry only one Host header' },
  invalidPath: {
    status: 400,
    family: 'gateway',
    message: 'the path must be an absolute path without "//", "\\", dot segments or encoded slashes',
  },
  credentialTooLong: { status: 400, family: 'gateway', message: 'a credential is longer than any valid credential' },
  invalidCredential: { status: 400, family: 'gateway', message: 'a credential holds bytes outside visible ASCII' },
  malformedRequest: { status: 400, family: 'gateway', message: 'the request is not valid HTTP/1.1' },
  requestTimeout: { status: 408, family: 'gateway', message: 'the request did not arrive in time' },
  chunkExtensionsTooLarge: { status: 413, family: 'gateway', message: 'the chunk extensions are too large' },
  expectationFailed: { status: 417, family: 'gateway', message: 'only "Expect: 100-continue" is supported' },
  headersTooLarge: { status: 431, family: 'gateway', message: 'the request line and headers are too large' },
  serviceUnavailable: { status: 503, family: 'gateway', message: 'the service is unavailable; retry later' },
  upstreamTimeout: { status: 504, family: 'gateway', message: 'the service did not answer in time' },

  // ---- /auth and /sessions (auth-service, session-service) ----
  BadRequest: { status: 400, family: 'signin', message: 'the request could not be read' },
  MissingParameters: { status: 400, family: 'signin', message: 'a required parameter is missing' },
  InvalidParameter: { status: 400, family: 'signin', message: 'a parameter is malformed' },
  InvalidApiKey: { status: 403, family: 'signin', message: 'the api key is not valid' },
  FreeNotAllowed: {
    status: 403,
    family: 'signin',
    message:
      'this api key may not skip certificate validation (free=true); send the request without free, or ask the operator for a key created with --allow-free',
  },
  CertUnreadable: { status: 403, family: 'signin', message: 'the body is not a certificate (PEM, base64 or DER)' },
  UnknownCertificate: { status: 403, family: 'signin', message: 'the certificate is not registered' },
  RndBytesNotFound: {
    status: 403,
    family: 'signin',
    message: 'no rnd is waiting for this certificate (none issued, used, or expired)',
  },
  WrongKey: { status: 403, family: 'signin', message: 'the rnd does not match' },
  InvalidRefreshToken: { status: 403, family: 'signin', message: 'the refresh token is unknown' },
  SidMismatch: { status: 403, family: 'signin', message: 'the auth.sid does not belong to this refresh token' },
  SessionRevoked: { status: 403, family: 'signin', message: 'the session was revoked; sign in again' },
  SessionTooOld: {
    status: 403,
    family: 'signin',
    message: 'the session has reached its maximum lifetime; sign in again',
  },
  RefreshTokenExpired: { status: 403, family: 'signin', message: 'the refresh token has expired; sign in again' },
  RefreshTokenReused: {
    status: 403,
    family: 'signin',
    message: 'the refresh token was used already; the session is revoked',
  },
  UserRemoved: { status: 403, family: 'signin', message: 'the user is no longer registered; the session is revoked' },
  CertificateRemoved: {
    status: 403,
    family: 'signin',
    message: 'the certificate signed in with is no longer registered; the session is revoked',
  },
  NotFound: { status: 404, family: 'signin', message: 'no route for this method and path' },
  MethodNotAllowed: { status: 405, family: 'signin', message: 'use POST' },
  CertNotValid: { status: 406, family: 'signin', message: 'the certificate is not valid' },
  BodyTooLarge: { status: 413, family: 'signin', message: 'the body is too large' },
  TooManyRequests: { status: 429, family: 'signin', message: 'too many requests; retry later' },
  UnknownError: { status: 500, family: 'signin', message: 'the request failed unexpectedly' },
  CreateSessionError: { status: 503, family: 'signin', message: 'the session service is unavailable; retry later' },
  ServiceUnavailable: { status: 503, family: 'signin', message: 'a dependency does not answer; retry later' },

  // ---- /internal/* between services ----
  InternalSecretRequired: {
    status: 401,
    family: 'signin',
    message: 'internal endpoint: the caller secret is missing or wrong',
    internal: true,
  },
  InternalRouteForbidden: {
    status: 403,
    family: 'signin',
    message: 'internal endpoint: this caller may not call this route',
    internal: true,
  },
  SessionNotFound: {
    status: 404,
    family: 'signin',
    message: 'the session is unknown, expired or revoked',
    internal: true,
  },
} as const satisfies Record<string, ErrorSpec>;

export type ErrorCode = keyof typeof ERROR_CATALOGUE;

export function isErrorCode(code: string): code is ErrorCode {
  return Object.hasOwn(ERROR_CATALOGUE, code);
}

export function errorSpec(code: ErrorCode): ErrorSpec {
  return ERROR_CATALOGUE[code];
}
