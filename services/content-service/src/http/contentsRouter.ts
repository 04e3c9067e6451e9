import { Router, type Request, type Response } from 'express';
import { pipeline } from 'node:stream/promises';
import { ServiceError } from '@cp/errors';
import { parseContentRange, parseRange } from '@cp/ranges';
import { isValidMediaType, MAX_MEDIA_TYPE_LENGTH } from '@cp/service-kit';
import { legacyTotalMismatch, setDownloadSafetyHeaders } from './downloadHeaders';
import type { DownloadService } from '../downloads/DownloadService';
import { formatRanges } from '../uploads/ByteRanges';
import { timingsOf } from '../uploads/StageTimings';
import type { UploadService } from '../uploads/UploadService';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The /v1 content API: upload, upload by parts, download. */
export function contentsRouter(uploads: UploadService, downloads: DownloadService): Router {
  const router = Router();

  router.post('/:ownerId/contents', async (req, res) => {
    const ownerId = requireOwner(req);
    const timings = timingsOf(res);
    const outcome = await uploads.write({ ...readWriteHeaders(req), ownerId, contentId: null, body: req, timings });
    res.setHeader('Server-Timing', timings.header());
    sendJson(res, 201, { id: outcome.id });
  });

  router.put('/:ownerId/contents/:contentId', async (req, res) => {
    const ownerId = requireOwner(req);
    const contentId = requireUuid(String(req.params.contentId), 'contentId');
    const headers = readWriteHeaders(req);
    if (headers.range === null) throw ServiceError.of('missingContentRange');
    const timings = timingsOf(res);
    const outcome = await uploads.write({ ...headers, ownerId, contentId, body: req, timings });
    res.setHeader('Server-Timing', timings.header());
    sendJson(res, outcome.completedNow ? 201 : 200, { id: outcome.id, content: { id: outcome.id }, 'is-completed': outcome.completed });
  });

  // Upload status for resuming clients; for a ready content, the headers of a GET without its body.
  router.head('/:ownerId/contents/:contentId', async (req, res) => {
    const ownerId = requireOwner(req);
    const contentId = requireUuid(String(req.params.contentId), 'contentId');
    const status = await downloads.status(ownerId, contentId);
    res.setHeader('X-Upload-State', status.state);
    if (status.state === 'ready') {
      const { record } = status;
      setDownloadSafetyHeaders(res);
      res.setHeader('X-Content-Total', String(record.total));
      res.setHeader('X-Received-Ranges', record.total > 0 ? `0-${record.total - 1}` : '');
      res.setHeader('Content-Type', record.contentType);
      res.setHeader('Content-Length', String(record.total));
      res.setHeader('Accept-Ranges', 'bytes');
      if (record.etag) res.setHeader('ETag', record.etag);
      if (record.completedAt) res.setHeader('Last-Modified', record.completedAt.toUTCString());
    } else {
      if (status.total !== null) res.setHeader('X-Content-Total', String(status.total));
      res.setHeader('X-Received-Ranges', formatRanges(status.received));
    }
    res.status(200).end();
  });

  router.get('/:ownerId/contents/:contentId', async (req, res) => {
    const ownerId = requireOwner(req);
    const contentId = requireUuid(String(req.params.contentId), 'contentId');
    const rangeHeader = req.headers.range;
    const range = rangeHeader === undefined ? null : parseRange(rangeHeader);
    const plan = await downloads.plan(ownerId, contentId, range);
    const mismatch = legacyTotalMismatch(range, plan.record.total);
    if (mismatch) throw mismatch;
    const abort = new AbortController();
    res.on('close', () => abort.abort());
    const stored = await downloads.open(plan, abort.signal);
    const length = plan.range === null ? 0 : plan.range.end - plan.range.start + 1;
    res.status(plan.status);
    setDownloadSafetyHeaders(res);
    res.setHeader('Content-Type', plan.record.contentType);
    res.setHeader('Content-Length', String(length));
    res.setHeader('Accept-Ranges', 'bytes');
    if (plan.record.etag) res.setHeader('ETag', plan.record.etag);
    if (plan.record.completedAt) res.setHeader('Last-Modified', plan.record.completedAt.toUTCString());
    if (plan.withContentRange && plan.range) res.setHeader('Content-Range', `bytes ${plan.range.start}-${plan.range.end}/${plan.record.total}`);
    if (!stored) {
      res.end();
      return;
    }
    try {
      await pipeline(stored.body, res);
    } catch {
      // The client went away or S3 broke off mid-stream: the headers are gone, so just drop the connection.
      res.destroy();
    }
  });

  return router;
}

function requireUuid(value: string, name: string): string {
  if (!UUID.test(value)) throw ServiceError.of('invalidId', `${name} ${JSON.stringify(value)} is not a UUID`);
  return value.toLowerCase();
}

/** Checks the path's owner id and that the caller's credential may act for that owner. */
function requireOwner(req: Request): string {
  const ownerId = requireUuid(String(req.params.ownerId), 'ownerId');
  const principal = req.principal;
  if (!principal) throw ServiceError.of('missingCredentials', 'no credentials');
  if (!principal.owners.includes(ownerId)) throw ServiceError.of('ownerForbidden', `these credentials may not act for owner ${ownerId}`);
  return ownerId;
}

function readWriteHeaders(req: Request) {
  const rangeHeader = req.headers['content-range'];
  const range = rangeHeader === undefined ? null : parseContentRange(rangeHeader);
  const lengthHeader = req.headers['content-length'];
  const chunked = /(^|,)\s*chunked\s*$/i.test(req.headers['transfer-encoding'] ?? '');
  let declaredLength: number | null = null;
  if (lengthHeader !== undefined) declaredLength = Number(lengthHeader);
  else if (!chunked) throw ServiceError.of('lengthRequired');
  const contentType = req.headers['content-type'] ?? null;
  // Stored and sent to S3 verbatim: a value outside the grammar or ASCII failed S3's signature (500).
  if (contentType !== null && !isValidMediaType(contentType)) {
    throw ServiceError.of(
      'invalidContentType',
      `Content-Type must be an ASCII media type (type/subtype; parameters) of at most ${MAX_MEDIA_TYPE_LENGTH} characters`,
    );
  }
  return { range, declaredLength, contentType };
}

function sendJson(res: Response, status: number, body: unknown): void {
  res.status(status).type('application/json; charset=utf-8').send(JSON.stringify(body));
}
