import type { Request, Response } from 'express';
import type { AuditActor } from '@cp/logging';
import type { Described } from '@cp/service-kit';

const CONTENT_PATH = /^\/v1\/([^/]+)\/contents(?:\/([^/]+))?(\/direct-parts\/[^/]+)?\/?$/;
const RESUMABLE_PATH = /^\/v1\/([^/]+)\/(?:tus|resumable)(?:\/([^/]+))?\/?$/;
const WEBHOOK_PATH = /^\/v1\/([^/]+)\/webhooks(?:\/([^/]+))?\/?$/;

/**
 * The audit records of a /v1 request: a content's creation, completion, download and deletion,
 * a webhook's creation and deletion,
 * whether done or refused. Part writes that do not complete a content, HEADs and receipts are not
 * audited facts. The router tells what it learnt in `res.locals` (`contentId`, `completed`).
 */
export function describeContentRequest(req: Request, res: Response): Described[] {
  // The path as sent (the router rewrites req.url while it routes).
  const path = req.originalUrl.split('?')[0]!;
  const hook = WEBHOOK_PATH.exec(path);
  if (hook) return describeWebhookRequest(req, res, hook);
  const resumable = RESUMABLE_PATH.exec(path);
  if (resumable) return describeResumableRequest(req, res, resumable);
  const m = CONTENT_PATH.exec(path);
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

/**
 * A tus or IETF resumable upload is a content: its creation (and completion, when the creation's
 * body finished it), the PATCH that completed it, and its termination.
 */
function describeResumableRequest(req: Request, res: Response, m: RegExpExecArray): Described[] {
  const content = (m[2]?.toLowerCase() ?? (res.locals.contentId as string | undefined)) || null;
  const base = { actor: actorOf(req), owner: m[1]!.toLowerCase(), content };
  if (req.method === 'POST' && !m[2]) {
    const created = { ...base, event: 'content.create' as const };
    return res.locals.completed ? [created, { ...base, event: 'content.complete' }] : [created];
  }
  if (req.method === 'PATCH' && res.locals.completed) return [{ ...base, event: 'content.complete' }];
  if (req.method === 'DELETE' && m[2]) return [{ ...base, event: 'content.delete' }];
  return [];
}

/** A webhook's creation or deletion (its id in `content`, the URL's host in detail; never its secret). */
function describeWebhookRequest(req: Request, res: Response, m: RegExpExecArray): Described[] {
  const base = { actor: actorOf(req), owner: m[1]!.toLowerCase() };
  if (req.method === 'POST' && !m[2]) {
    const id = (res.locals.webhookId as string | undefined) ?? null;
    return [{ ...base, event: 'webhook.create', content: id, detail: { host: hostOf(req.body) } }];
  }
  if (req.method === 'DELETE' && m[2]) return [{ ...base, event: 'webhook.delete', content: m[2].toLowerCase() }];
  return [];
}

function hostOf(body: unknown): string | null {
  const url = (body as { url?: unknown } | undefined)?.url;
  if (typeof url !== 'string') return null;
  try {
    return new URL(url).host.slice(0, 255);
  } catch {
    return null;
  }
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
