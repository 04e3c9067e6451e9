import type { Request, Response } from 'express';
import { ServiceError } from '@cp/errors';
import { isValidMediaType, MAX_MEDIA_TYPE_LENGTH } from '@cp/service-kit';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function requireUuid(value: string, name: string): string {
  if (!UUID.test(value)) throw ServiceError.of('invalidId', `${name} ${JSON.stringify(value)} is not a UUID`);
  return value.toLowerCase();
}

/** Who sends a write, as kept with the content: `bearer:<sub>` or `session:<user>`. */
export function uploaderOf(req: Request): string | null {
  return req.principal ? `${req.principal.kind}:${req.principal.subject}` : null;
}

/** Who sends a write, and the thumbprint of the certificate it signed in with: kept with the content. */
export function senderOf(req: Request): { uploader: string | null; uploaderCertificate: string | null } {
  return { uploader: uploaderOf(req), uploaderCertificate: req.principal?.thumbprint ?? null };
}

/** The body's declared length on the resumable doors, sent with Content-Length (411 for a chunked body). */
export function declaredBodyLength(req: Request, door: string): number {
  const header = req.headers['content-length'];
  if (header === undefined) {
    if (req.headers['transfer-encoding'] === undefined) return 0;
    throw ServiceError.of('lengthRequired', `a ${door} body needs Content-Length`);
  }
  return Number(header);
}

/**
 * The request's Content-Type, the content's media type; null when absent. Stored and sent to S3
 * verbatim: a value outside the grammar or ASCII failed S3's signature (500), so it is 400 here.
 */
export function contentTypeOf(req: Request): string | null {
  const value = req.headers['content-type'];
  if (value === undefined) return null;
  if (!isValidMediaType(value))
    throw ServiceError.of(
      'invalidContentType',
      `Content-Type must be an ASCII media type (type/subtype; parameters) of at most ${MAX_MEDIA_TYPE_LENGTH} characters`,
    );
  return value;
}

/** Checks the path's owner id and that the caller's credential may act for that owner. */
export function requireOwner(req: Request): string {
  const ownerId = requireUuid(String(req.params.ownerId), 'ownerId');
  const principal = req.principal;
  if (!principal) throw ServiceError.of('missingCredentials', 'no credentials');
  if (!principal.owners.includes(ownerId))
    throw ServiceError.of('ownerForbidden', `these credentials may not act for owner ${ownerId}`);
  return ownerId;
}

export function sendJson(res: Response, status: number, body: unknown): void {
  res.status(status).type('application/json; charset=utf-8').send(JSON.stringify(body));
}
