import { Router, type Request, type Response } from 'express';
import { ServiceError } from '@cp/errors';
import type { RangeRequest } from '@cp/protocol';
import type { DownloadService } from '../downloads/DownloadService';
import type { DirectPartRequest } from '../uploads/DirectParts';
import { timingsOf } from '../uploads/UploadMetrics';
import type { UploadService } from '../uploads/UploadService';
import { requireOwner, requireUuid, sendJson } from './v1Requests';

/** The most parts one request may ask URLs for (a 30 GiB content has 480). */
const MAX_PARTS_PER_REQUEST = 1000;
/** The largest JSON body the direct-parts calls read. */
const MAX_JSON_BYTES = 64 * 1024;

/**
 * Direct transfer (where the operator enabled it): presigned UploadPart URLs for parts of an
 * unfinished content, and the recording of a part sent to one. 501 `directTransferDisabled` otherwise.
 */
export function directRouter(uploads: UploadService): Router {
  const router = Router();

  router.post('/:ownerId/contents/:contentId/direct-parts', async function directParts(req, res) {
    const ownerId = requireOwner(req);
    const contentId = requireUuid(String(req.params.contentId), 'contentId');
    if (!uploads.direct.enabled) throw ServiceError.of('directTransferDisabled');
    const parts = partsOf(await readJson(req));
    const targets = await uploads.direct.targets(ownerId, contentId, parts);
    res.setHeader('Cache-Control', 'no-store');
    sendJson(res, 200, {
      parts: targets.map((t) => ({
        part: t.part,
        method: t.method,
        url: t.url,
        headers: t.headers,
        'expires-at': t.expiresAt.toISOString(),
      })),
    });
  });

  router.post('/:ownerId/contents/:contentId/direct-parts/:part', async function directPartSent(req, res) {
    const ownerId = requireOwner(req);
    const contentId = requireUuid(String(req.params.contentId), 'contentId');
    if (!uploads.direct.enabled) throw ServiceError.of('directTransferDisabled');
    const part = String(req.params.part);
    if (!/^[1-9][0-9]{0,5}$/.test(part))
      throw ServiceError.of('invalidDirectParts', `part ${JSON.stringify(part)} is not a part number`);
    const body = await readJson(req);
    const etag = (body as { etag?: unknown } | null)?.etag;
    if (typeof etag !== 'string' || !/^"?[\x21\x23-\x7e]{1,128}"?$/.test(etag))
      throw ServiceError.of('invalidDirectParts', 'the body must be {"etag":"<the ETag S3 answered the part with>"}');
    const timings = timingsOf(res);
    const outcome = await uploads.direct.confirm(ownerId, contentId, Number(part), etag, timings);
    res.setHeader('Server-Timing', timings.header());
    sendJson(res, outcome.completedNow ? 201 : 200, {
      id: outcome.id,
      content: { id: outcome.id },
      'is-completed': outcome.completed,
    });
  });

  return router;
}

/**
 * For a GET that asks `Prefer: redirect` (RFC 7240) where direct transfer is enabled: 307 to a
 * presigned GetObject of the ready content (bound to the request's Range as sent); true when answered.
 */
export async function sendRedirect(
  req: Request,
  res: Response,
  downloads: DownloadService,
  at: { ownerId: string; contentId: string; range: RangeRequest | null },
): Promise<boolean> {
  if (!downloads.redirects || !prefersRedirect([req.headers.prefer ?? []].flat().join(','))) return false;
  const target = await downloads.redirect(at.ownerId, at.contentId, at.range, req.headers.range);
  if (!target) return false;
  res.status(307);
  res.setHeader('Location', target.url);
  res.setHeader('Preference-Applied', 'redirect');
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader('Vary', 'Prefer');
  res.setHeader('Content-Length', '0');
  res.end();
  return true;
}

/** Whether a Prefer header names the `redirect` preference (any parameters ignored). */
export function prefersRedirect(prefer: string | undefined): boolean {
  if (!prefer) return false;
  return prefer.split(',').some((item) => item.split(';')[0]!.split('=')[0]!.trim().toLowerCase() === 'redirect');
}

function partsOf(body: unknown): DirectPartRequest[] {
  const bad = (detail?: string) => ServiceError.of('invalidDirectParts', detail);
  const list = (body as { parts?: unknown } | null)?.parts;
  if (!Array.isArray(list) || list.length === 0 || list.length > MAX_PARTS_PER_REQUEST)
    throw bad(`the body must name 1 to ${MAX_PARTS_PER_REQUEST} parts: {"parts":[{"part":1}]}`);
  return list.map((item: unknown) => {
    const { part, sha256 } = (item ?? {}) as { part?: unknown; sha256?: unknown };
    if (typeof part !== 'number' || !Number.isSafeInteger(part) || part < 1) throw bad('each part is a number from 1');
    if (sha256 === undefined) return { part };
    const digest =
      typeof sha256 === 'string' && /^[A-Za-z0-9+/]{43}=$/.test(sha256) ? Buffer.from(sha256, 'base64') : null;
    if (!digest || digest.length !== 32) throw bad(`part ${part}: sha256 must be the base64 of 32 bytes`);
    return { part, sha256: digest };
  });
}

/** The request's JSON body (at most 64 KiB); 400 invalidDirectParts when it is not JSON. */
async function readJson(req: Request): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_JSON_BYTES) throw ServiceError.of('invalidDirectParts', 'the body is larger than 64 KiB');
    chunks.push(chunk);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
  } catch {
    throw ServiceError.of('invalidDirectParts');
  }
}
