import type { Request, RequestHandler, Response } from 'express';
import { ERROR_CATALOGUE, type ErrorCode } from '@cp/errors';
import {
  HEADERS,
  headerKey,
  MAX_CONTENT_SIZE,
  PART_SIZE,
  parseContentRange,
  RangeSyntaxError,
  type ContentRange,
} from '@cp/protocol';
import { closeAfterAnswer, isValidMediaType, MAX_MEDIA_TYPE_LENGTH } from '@cp/service-kit';
import { upstreamFor, type Upstream } from './routes';
import { sendGatewayError } from './upstreamErrorBody';

/** Longest credential values passed on: far above any real JWT, sid, refresh token or api key. */
export const MAX_AUTHORIZATION_LENGTH = 8192;
export const MAX_TOKEN_LENGTH = 1024;

// Query parameters that carry credentials (and the thumbprint), passed on to other services.
const CREDENTIAL_PARAMETERS = ['api-key', 'apikey', 'auth.sid', 'sid', 'refresh-token', 'refreshtoken', 'thumbprint'];
const NON_ASCII_OR_CONTROL = /[^\x20-\x7E\t]/;

/** An answer the gateway gives itself, by a catalogued code (whose status it takes), with a specific message. */
export class EdgeRefusal {
  readonly status: number;

  constructor(
    readonly code: ErrorCode,
    readonly message: string = ERROR_CATALOGUE[code].message,
  ) {
    this.status = ERROR_CATALOGUE[code].status;
  }
}

/**
 * What the gateway decides from a request's head alone, before routing and before any body byte
 * is read: a request that can never succeed is answered at once (and gets no 100 Continue).
 * Returns null when the request may go on.
 */
export function refusalOf(req: Request): EdgeRefusal | null {
  const hosts = req.rawHeaders.filter((_, i) => i % 2 === 0 && req.rawHeaders[i]!.toLowerCase() === 'host').length;
  if (hosts === 0 && req.httpVersion === '1.1')
    return new EdgeRefusal('missingHost', 'an HTTP/1.1 request needs one Host header');
  if (hosts > 1) return new EdgeRefusal('duplicateHost', 'a request may carry only one Host header');

  const target = req.url;
  const query = target.indexOf('?');
  const path = query < 0 ? target : target.slice(0, query);
  if (!path.startsWith('/') || !isCleanPath(path))
    return new EdgeRefusal(
      'invalidPath',
      'the path must be an absolute path without "//", "\\", dot segments or encoded slashes',
    );
  if (NON_ASCII_OR_CONTROL.test(target))
    return new EdgeRefusal('invalidPath', 'the request target holds bytes outside visible ASCII');

  // Node decodes the chunked framing and nothing else: a body in any other transfer coding (gzip,
  // chunked) would reach the services still coded, and be stored so (RFC 9112 §6.1: refuse it).
  const transferEncoding = req.headers['transfer-encoding'];
  if (transferEncoding !== undefined && transferEncoding.trim().toLowerCase() !== 'chunked')
    return new EdgeRefusal('malformedRequest', 'Transfer-Encoding may only be "chunked"');

  const expect = req.headers.expect;
  if (expect !== undefined && expect.trim().toLowerCase() !== '100-continue')
    return new EdgeRefusal('expectationFailed', 'only "Expect: 100-continue" is supported');

  const contentType = req.headers['content-type'];
  if (contentType !== undefined && !isValidMediaType(contentType)) {
    return new EdgeRefusal(
      'invalidContentType',
      `Content-Type must be an ASCII media type (type/subtype; parameters) of at most ${MAX_MEDIA_TYPE_LENGTH} characters`,
    );
  }

  const credentials = credentialRefusal(req);
  if (credentials) return credentials;

  if (upstreamFor(req.path) === 'content') return contentRefusal(req);
  return null;
}

function isCleanPath(path: string): boolean {
  if (path.includes('//') || path.includes('\\')) return false;
  if (/%(2f|5c|00)/i.test(path)) return false;
  // `.` and `..` segments, also percent-encoded: a proxy or framework may resolve them into another route.
  return !path.split('/').some((segment) => /^(\.|%2e){1,2}$/i.test(segment));
}

function credentialRefusal(req: Request): EdgeRefusal | null {
  const tooLong = (name: string) => new EdgeRefusal('credentialTooLong', `${name} is longer than any valid credential`);
  const notAscii = (name: string) => new EdgeRefusal('invalidCredential', `${name} holds bytes outside visible ASCII`);
  const authorization = req.headers.authorization;
  if (authorization !== undefined) {
    if (authorization.length > MAX_AUTHORIZATION_LENGTH) return tooLong('Authorization');
    if (NON_ASCII_OR_CONTROL.test(authorization)) return notAscii('Authorization');
  }
  // Only the session cookie is a credential; other cookies of the domain are none of our business.
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0 || part.slice(0, eq).trim() !== 'auth.sid') continue;
    const sid = part.slice(eq + 1).trim();
    if (sid.length > MAX_TOKEN_LENGTH) return tooLong('the auth.sid cookie');
    if (NON_ASCII_OR_CONTROL.test(sid)) return notAscii('the auth.sid cookie');
  }
  const apiKeyHeader = req.headers[headerKey(HEADERS.apiKey)];
  const apiKey = Array.isArray(apiKeyHeader) ? apiKeyHeader.join(', ') : apiKeyHeader;
  if (apiKey !== undefined) {
    if (apiKey.length > MAX_TOKEN_LENGTH) return tooLong(HEADERS.apiKey);
    if (NON_ASCII_OR_CONTROL.test(apiKey)) return notAscii(HEADERS.apiKey);
  }
  const query = req.url.indexOf('?');
  if (query >= 0) {
    for (const [name, value] of new URLSearchParams(req.url.slice(query + 1))) {
      if (!CREDENTIAL_PARAMETERS.includes(name.toLowerCase())) continue;
      if (value.length > MAX_TOKEN_LENGTH) return tooLong(name);
      if (NON_ASCII_OR_CONTROL.test(value)) return notAscii(name);
    }
  }
  return null;
}

/**
 * Writes to /v1 that can be refused from their length and Content-Range alone: the content-service
 * stays the authority; the gateway applies the same grammar and limits (@cp/protocol) only to
 * refuse from the head a write that can never succeed, before any body byte is read.
 */
/** The resumable doors' paths (`/v1/{ownerId}/tus`, `/v1/{ownerId}/resumable`, and an upload's below each). */
const RESUMABLE_PATH = /^\/v1\/[^/]+\/(tus|resumable)(\/[^/]*)?$/;

function contentRefusal(req: Request): EdgeRefusal | null {
  for (const name of [HEADERS.contentRange, HEADERS.range]) {
    const value = req.headers[headerKey(name)];
    if (value !== undefined && (value.length > 100 || NON_ASCII_OR_CONTROL.test(value))) {
      return new EdgeRefusal('invalidRange', `${name} is not a byte range`);
    }
  }
  if (req.method !== 'POST' && req.method !== 'PUT') return null;
  // The resumable doors take a creation's body of any length (the content-service cuts it into parts).
  if (RESUMABLE_PATH.test(req.path)) return null;
  const lengthHeader = req.headers['content-length'];
  const length = lengthHeader === undefined ? null : Number(lengthHeader);
  if (length === null && req.headers['transfer-encoding'] === undefined)
    return new EdgeRefusal('lengthRequired', 'send Content-Length (or a chunked body)');
  if (length !== null && length > PART_SIZE)
    return new EdgeRefusal(
      'partTooLarge',
      `a request may carry at most ${PART_SIZE} bytes; this one declares ${lengthHeader}`,
    );
  const header = req.headers[headerKey(HEADERS.contentRange)];
  if (header === undefined) return null;
  let range: ContentRange;
  try {
    range = parseContentRange(header);
  } catch (error) {
    if (error instanceof RangeSyntaxError) return new EdgeRefusal('invalidRange', error.message);
    throw error;
  }
  const { start, end, total } = range;
  if (end - start + 1 > PART_SIZE)
    return new EdgeRefusal(
      'partTooLarge',
      `a part may carry at most ${PART_SIZE} bytes; this one names ${end - start + 1}`,
    );
  if ((total !== null && total > MAX_CONTENT_SIZE) || end >= MAX_CONTENT_SIZE)
    return new EdgeRefusal('contentTooLarge', `a content may be at most ${MAX_CONTENT_SIZE} bytes`);
  if (length !== null && length !== end - start + 1)
    return new EdgeRefusal(
      'bodyLengthMismatch',
      `Content-Length ${length} differs from the ${end - start + 1} bytes Content-Range names`,
    );
  return null;
}

/**
 * Runs the head checks first thing. A refused request is answered with Connection: close (its body,
 * if any, is never passed on: it is read and dropped for a bounded time, see closeAfterAnswer); an accepted `Expect: 100-continue` gets its 100 Continue here, and the
 * Expect header is not passed upstream (the body is already on its way).
 */
export function edgeChecks(): RequestHandler {
  return (req, res, next) => {
    const refusal = refusalOf(req);
    if (refusal) {
      sendRefusal(req, res, refusal);
      return;
    }
    if (req.headers.expect !== undefined) {
      if (req.httpVersion === '1.1' && !res.headersSent) res.writeContinue();
      delete req.headers.expect;
    }
    next();
  };
}

export function sendRefusal(req: Request, res: Response, refusal: EdgeRefusal): void {
  const upstream: Upstream | null = upstreamFor(req.path);
  closeAfterAnswer(req, res);
  sendGatewayError(res, upstream, refusal, req.id);
}
