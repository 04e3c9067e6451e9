/**
 * Every error code the platform answers with, each declared once with its status, default
 * message and the client's hint. Throw sites name the code (`ServiceError.of('contentNotFound',
 * detail)`), so a code that is not here does not compile; `pnpm generate:errors` writes
 * openapi.yaml's code enums and the client's hints from here, and
 * `libs/errors/test/catalogue.test.ts` checks that every code used is here and that those files
 * say what this says.
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
  missingHost: {
    status: 400,
    family: 'gateway',
    message: 'an HTTP/1.1 request needs one Host header',
    hint: 'the request had no Host header; this is a client bug',
  },
  duplicateHost: {
    status: 400,
    family: 'gateway',
    message: 'a request may carry only one Host header',
    hint: 'the request had two Host headers; check proxies between the client and the service',
  },
  invalidPath: {
    status: 400,
    family: 'gateway',
    message: 'the path must be an absolute path without "//", "\\", dot segments or encoded slashes',
    hint: 'the path is not a clean absolute path; check --url and the ids',
  },
  credentialTooLong: {
    status: 400,
    family: 'gateway',
    message: 'a credential is longer than any valid credential',
    hint: 'a credential (token, sid, api key) is far too long; check what --token or the saved login holds',
  },
  invalidCredential: {
    status: 400,
    family: 'gateway',
    message: 'a credential holds bytes outside visible ASCII',
    hint: 'a credential holds characters outside visible ASCII; check --token or the saved login',
  },
  malformedRequest: {
    status: 400,
    family: 'gateway',
    message: 'the request is not valid HTTP/1.1',
    hint: 'the request was not valid HTTP; check proxies between the client and the service',
  },
  requestTimeout: {
    status: 408,
    family: 'gateway',
    message: 'the request did not arrive in time',
    hint: 'the request went silent for too long; retry (the client does so by itself)',
  },
  chunkExtensionsTooLarge: {
    status: 413,
    family: 'gateway',
    message: 'the chunk extensions are too large',
    hint: 'the chunked body was malformed; this is a client bug',
  },
  expectationFailed: {
    status: 417,
    family: 'gateway',
    message: 'only "Expect: 100-continue" is supported',
    hint: 'only `Expect: 100-continue` is supported; this is a client bug',
  },
  headersTooLarge: {
    status: 431,
    family: 'gateway',
    message: 'the request line and headers are too large',
    hint: 'the request headers are too large; check the size of the token and proxies in between',
  },
  serviceUnavailable: {
    status: 503,
    family: 'gateway',
    message: 'the service is unavailable; retry later',
    hint: 'a service behind the gateway is down or restarting; retry later (the client does so by itself)',
  },
  upstreamTimeout: {
    status: 504,
    family: 'gateway',
    message: 'the service did not answer in time',
    hint: 'a service behind the gateway did not answer in time; retry (the client does so by itself)',
  },

  // ---- /auth and /sessions (auth-service, session-service) ----
  BadRequest: {
    status: 400,
    family: 'signin',
    message: 'the request could not be read',
    hint: 'the request could not be read; this is a client bug',
  },
  MissingParameters: {
    status: 400,
    family: 'signin',
    message: 'a required parameter is missing',
    hint: 'a parameter (api key, certificate, thumbprint or body) is missing',
  },
  InvalidParameter: {
    status: 400,
    family: 'signin',
    message: 'a parameter is malformed',
    hint: 'a parameter is malformed (e.g. the thumbprint); check the certificate file',
  },
  InvalidApiKey: {
    status: 403,
    family: 'signin',
    message: 'the api key is not valid',
    hint: 'the api key is unknown; ask the operator for one (`pnpm admin apikey create`)',
  },
  FreeNotAllowed: {
    status: 403,
    family: 'signin',
    message:
      'this api key may not skip certificate validation (free=true); send the request without free, or ask the operator for a key created with --allow-free',
    hint: 'this api key may not skip certificate validation; sign in without free, or ask the operator for a key made with --allow-free',
  },
  CertUnreadable: {
    status: 403,
    family: 'signin',
    message: 'the body is not a certificate (PEM, base64 or DER)',
    hint: 'the file is not a certificate (PEM or DER)',
  },
  UnknownCertificate: {
    status: 403,
    family: 'signin',
    message: 'the certificate is not registered',
    hint: 'the certificate is not registered; ask the operator to add it (`pnpm admin user add`)',
  },
  RndBytesNotFound: {
    status: 403,
    family: 'signin',
    message: 'no rnd is waiting for this certificate (none issued, used, or expired)',
    hint: 'the sign-in challenge expired or was used; run `content login` again',
  },
  WrongKey: {
    status: 403,
    family: 'signin',
    message: 'the rnd does not match',
    hint: 'the private key does not match the certificate',
  },
  InvalidRefreshToken: {
    status: 403,
    family: 'signin',
    message: 'the refresh token is unknown',
    hint: 'the refresh token is unknown; run `content login`',
  },
  SidMismatch: {
    status: 403,
    family: 'signin',
    message: 'the auth.sid does not belong to this refresh token',
    hint: 'the saved session is inconsistent; run `content login`',
  },
  SessionRevoked: {
    status: 403,
    family: 'signin',
    message: 'the session was revoked; sign in again',
    hint: 'the session was revoked; run `content login`',
  },
  SessionTooOld: {
    status: 403,
    family: 'signin',
    message: 'the session has reached its maximum lifetime; sign in again',
    hint: 'the sign-in reached its maximum lifetime; run `content login`',
  },
  RefreshTokenExpired: {
    status: 403,
    family: 'signin',
    message: 'the refresh token has expired; sign in again',
    hint: 'the refresh token expired; run `content login`',
  },
  RefreshTokenReused: {
    status: 403,
    family: 'signin',
    message: 'the refresh token was used already; the session is revoked',
    hint: 'the refresh token was used already and the session was revoked; run `content login`',
  },
  UserRemoved: {
    status: 403,
    family: 'signin',
    message: 'the user is no longer registered; the session is revoked',
    hint: 'the user is no longer registered; ask the operator, then run `content login`',
  },
  CertificateRemoved: {
    status: 403,
    family: 'signin',
    message: 'the certificate signed in with is no longer registered; the session is revoked',
    hint: 'the certificate is no longer registered; ask the operator, then run `content login`',
  },
  NotFound: {
    status: 404,
    family: 'signin',
    message: 'no route for this method and path',
    hint: 'no such sign-in endpoint: check --url (it should be the gateway, e.g. http://host:8080)',
  },
  MethodNotAllowed: {
    status: 405,
    family: 'signin',
    message: 'use POST',
    hint: 'the sign-in endpoints take POST only; this is a client bug',
  },
  CertNotValid: {
    status: 406,
    family: 'signin',
    message: 'the certificate is not valid',
    hint: 'the certificate is expired, not yet valid, or not issued by a trusted CA',
  },
  BodyTooLarge: {
    status: 413,
    family: 'signin',
    message: 'the body is too large',
    hint: 'the request body is too large for this endpoint',
  },
  TooManyRequests: {
    status: 429,
    family: 'signin',
    message: 'too many requests; retry later',
    hint: 'too many sign-in requests for this api key or address; retry after the time the service names (the client does so by itself)',
  },
  UnknownError: {
    status: 500,
    family: 'signin',
    message: 'the request failed unexpectedly',
    hint: 'the sign-in service failed unexpectedly; retry, and report it if it persists',
  },
  CreateSessionError: {
    status: 503,
    family: 'signin',
    message: 'the session service is unavailable; retry later',
    hint: 'the session service is unavailable; retry later',
  },
  ServiceUnavailable: {
    status: 503,
    family: 'signin',
    message: 'a dependency does not answer; retry later',
    hint: 'the service is unavailable; retry later',
  },

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
