import type { Request, RequestHandler, Response } from 'express';
import { auditOutcome, type AuditLog, type AuditRecord } from '@cp/logging';
import { whenDone } from './whenDone';

/** What a service says of a request for its audit record; the rest is the request's own. */
export type Described = Omit<AuditRecord, 'outcome' | 'from' | 'requestId' | 'status'>;

/**
 * Where the request came from, for the audit record: the whole X-Forwarded-For chain the gateway
 * keeps (each hop as it claimed), else the peer; not the one address a trusted hop saw (@cp/rate-limit's clientAddress).
 */
export function forwardedChain(req: Request): string | null {
  const forwarded = req.headers['x-forwarded-for'];
  const chain = Array.isArray(forwarded) ? forwarded.join(',') : forwarded;
  return (chain ? chain.slice(0, 256) : req.socket.remoteAddress) ?? null;
}

/**
 * Writes the audit records of a request when it ends (answered, refused, failed or broken off):
 * what `describe` says of it (none, one, or one per fact: a one-request upload is created and
 * completed), each with the request id, client address, status and outcome. `describe` runs then,
 * so it sees what the handler learnt (the principal, the content id it made).
 */
export function audited(audit: AuditLog, describe: (req: Request, res: Response) => Described[]): RequestHandler {
  return (req, res, next) => {
    let done = false;
    const write = (aborted: boolean) => {
      if (done) return;
      done = true;
      for (const described of describe(req, res))
        audit.record({
          ...described,
          outcome: auditOutcome(res.statusCode, aborted),
          status: res.statusCode,
          from: forwardedChain(req),
          requestId: req.id ?? null,
        });
    };
    whenDone(res, (finished) => write(!finished));
    next();
  };
}
