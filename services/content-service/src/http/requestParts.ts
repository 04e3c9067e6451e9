import type { Request, Response } from 'express';
import { ServiceError } from '@cp/errors';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function requireUuid(value: string, name: string): string {
  if (!UUID.test(value)) throw ServiceError.of('invalidId', `${name} ${JSON.stringify(value)} is not a UUID`);
  return value.toLowerCase();
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
