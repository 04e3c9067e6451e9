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
import type { ErrorSpec } from './ErrorSpec';
import { CONTENTS_ERRORS } from './contentsErrors';

export type { ErrorSpec };

export const ERROR_CATALOGUE = {
  // ---- /v1 (content-service): contentsErrors.ts ----
  ...CONTENTS_ERRORS,
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
