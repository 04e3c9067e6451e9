import type { Request, Response } from 'express';
import type { AuditActor } from '@cp/logging';
import type { Described } from '@cp/service-kit';

const CONTENT_PATH = /^\/v1\/([^/]+)\/contents(?:\/([^/]+))?(\/direct-parts\/[^/]+)?\/?$/;

/**
 * The audit records of a /v1 request: a content's creation, completion, download and deletion,
 * whether done or refused. Part writes that do not complete a content, HEADs and receipts are not
 * audited facts. The router tells what it learnt in `res.locals` (`contentId`, `completed`).
 */
export function describeContentRequest(req: Request, res: Response): Described[] {
  // The path as sent (the router rewrites req.url while it routes).
  const m = CONTENT_PATH.exec(req.originalUrl.split('?')[0]!);
  if (!m) return [];
  const owner = m[1]!.toLowerCase();
  const content = (m[2]?.toLowerCase() ?? (res.locals.contentId as string | undefined)) || null;
  const base = { actor: actorOf(req), owner, content };
  if (req.method === 'POST' && !m[2]) {
    const created = { ...base, event: 'content.create' as const };
    return res.locals.completed ? [created, { ...base, event: 'content.complete' }] : [created];
  }
  if (!m[2]) return [];
  // A part sent straight to S3, recorded: the request that completes the content answers 201 as a PUT does.
  if (m[3]) return req.method === 'POST' && res.statusCode === 201 ? [{ ...base, event: 'content.complete' }] : [];
  if (req.method === 'PUT') return res.statusCode === 201 ? [{ ...base, event: 'content.complete' }] : [];
  if (req.method === 'GET') return [{ ...base, event: 'content.download', detail: rangeOf(req) }];
  if (req.method === 'DELETE') return [{ ...base, event: 'content.delete' }];
  return [];
}

function actorOf(req: Request): AuditActor {
  const principal = req.principal;
  if (!principal) return { kind: 'unknown', subject: null };
  return {
    kind: principal.kind,
    subject: principal.subject,
    ...(principal.thumbprint ? { certificate: principal.thumbprint } : {}),
  };
}

function rangeOf(req: Request): Described['detail'] {
  const range = req.headers.range;
  return range ? { range: range.slice(0, 100) } : undefined;
}
