import { Router, type Request, type Response } from 'express';
import { ServiceError } from '@cp/errors';
import {
  formatContentRange,
  formatDigest,
  formatReceivedRanges,
  headerKey,
  HEADERS,
  parseContentDigest,
  parseContentRange,
  parseRange,
} from '@cp/protocol';
import { sendBody, whenDone } from '@cp/service-kit';
import { setDownloadSafetyHeaders } from './downloadHeaders';
import { sendRedirect } from './directRouter';
import { contentTypeOf, requireOwner, requireUuid, sendJson, senderOf } from './v1Requests';
import type { ObjectInfo } from '../store/ObjectStore';
import type { DownloadService } from '../downloads/DownloadService';
import { MAX_PAGE, type ContentListing } from '../listing/ContentListing';
import type { ContentReceipts } from '../receipts/ContentReceipts';
import { timingsOf } from '../uploads/UploadMetrics';
import type { UploadService } from '../uploads/UploadService';

/** RFC 8551's type of a CMS SignedData (.p7m). */
const RECEIPT_MEDIA_TYPE = 'application/pkcs7-mime; smime-type=signed-data';

/** Contents per page of a listing without `limit`. */
const DEFAULT_PAGE = 100;

/** The /v1 content API: list, upload, upload by parts, download, delete, and a ready content's signed receipt. */
export function contentsRouter(
  uploads: UploadService,
  downloads: DownloadService,
  receipts: ContentReceipts,
  listing: ContentListing,
): Router {
  const router = Router();

  // The owner's contents, ready and unfinished, in id order, a page at a time.
  router.get('/:ownerId/contents', async function listContents(req, res) {
    const ownerId = requireOwner(req);
    const { limit, cursor } = req.query;
    if (limit !== undefined && (typeof limit !== 'string' || !/^[1-9][0-9]{0,3}$/.test(limit) || +limit > MAX_PAGE))
      throw ServiceError.of('invalidLimit', `limit must be a whole number from 1 to ${MAX_PAGE}`);
    if (cursor !== undefined && typeof cursor !== 'string') throw ServiceError.of('invalidCursor');
    const page = await listing.page(ownerId, limit === undefined ? DEFAULT_PAGE : Number(limit), cursor ?? null);
    res.setHeader('Cache-Control', 'no-store');
    sendJson(res, 200, page);
  });

  router.post('/:ownerId/contents', async function upload(req, res) {
    const ownerId = requireOwner(req);
    const timings = timingsOf(res);
    const outcome = await uploads.write({
      ...readWriteHeaders(req),
      ownerId,
      contentId: null,
      ...senderOf(req),
      body: req,
      timings,
    });
    res.locals.contentId = outcome.id; // for its audit record
    res.locals.completed = outcome.completed;
    res.setHeader('Server-Timing', timings.header());
    sendJson(res, 201, { id: outcome.id });
  });

  router.put('/:ownerId/contents/:contentId', async function uploadByParts(req, res) {
    const ownerId = requireOwner(req);
    const contentId = requireUuid(String(req.params.contentId), 'contentId');
    const headers = readWriteHeaders(req);
    if (headers.range === null) throw ServiceError.of('missingContentRange');
    const timings = timingsOf(res);
    const outcome = await uploads.write({
      ...headers,
      ownerId,
      contentId,
      ...senderOf(req),
      body: req,
      timings,
    });
    res.setHeader('Server-Timing', timings.header());
    sendJson(res, outcome.completedNow ? 201 : 200, {
      id: outcome.id,
      content: { id: outcome.id },
      'is-completed': outcome.completed,
    });
  });

  // Upload status for resuming clients; for a ready content, the headers of a GET without its body.
  router.head('/:ownerId/contents/:contentId', async function uploadStatus(req, res) {
    const ownerId = requireOwner(req);
    const contentId = requireUuid(String(req.params.contentId), 'contentId');
    const status = await downloads.status(ownerId, contentId);
    res.setHeader(HEADERS.uploadState, status.state);
    if (status.state === 'ready') {
      const total = status.info.contentLength;
      res.setHeader(HEADERS.contentTotal, String(total));
      res.setHeader(HEADERS.receivedRanges, total > 0 ? formatReceivedRanges([{ start: 0, end: total - 1 }]) : '');
      setObjectHeaders(res, status.info, total);
    } else {
      if (status.total !== null) res.setHeader(HEADERS.contentTotal, String(status.total));
      res.setHeader(HEADERS.receivedRanges, formatReceivedRanges(status.received));
    }
    res.status(200).end();
  });

  router.get('/:ownerId/contents/:contentId', async function downloadContent(req, res) {
    const ownerId = requireOwner(req);
    const contentId = requireUuid(String(req.params.contentId), 'contentId');
    const rangeHeader = req.headers.range;
    const range = rangeHeader === undefined ? null : parseRange(rangeHeader);
    if (await sendRedirect(req, res, downloads, { ownerId, contentId, range })) return;
    const abort = new AbortController();
    // Only a GET broken off aborts its S3 read (an abort makes a DOMException, and its stack, each time).
    whenDone(res, (finished) => {
      if (!finished) abort.abort();
    });
    const download = await downloads.open(ownerId, contentId, range, abort.signal);
    res.status(download.status);
    setObjectHeaders(res, download.info, download.length);
    if (download.range)
      res.setHeader(HEADERS.contentRange, formatContentRange(download.range, download.info.contentLength));
    if (!download.body) {
      res.end();
      return;
    }
    // The client going away or S3 breaking off mid-stream drops the connection: the headers are gone.
    await sendBody(download.body, res).catch(() => undefined);
  });

  // A ready content's object deleted, or an unfinished upload aborted (see ContentRemoval).
  router.delete('/:ownerId/contents/:contentId', async function deleteContent(req, res) {
    const ownerId = requireOwner(req);
    const contentId = requireUuid(String(req.params.contentId), 'contentId');
    await uploads.remove(ownerId, contentId);
    res.status(204).end();
  });

  // A signed receipt of a ready content (DER CMS SignedData), made anew for each request.
  router.get('/:ownerId/contents/:contentId/receipt', async function issueReceipt(req, res) {
    const ownerId = requireOwner(req);
    const contentId = requireUuid(String(req.params.contentId), 'contentId');
    const receipt = await receipts.issue(ownerId, contentId);
    res.status(200);
    res.setHeader('Content-Type', RECEIPT_MEDIA_TYPE);
    res.setHeader('Content-Length', String(receipt.length));
    res.setHeader('Content-Disposition', `attachment; filename="receipt-${contentId}.p7m"`);
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Cache-Control', 'no-store');
    res.end(receipt);
  });

  return router;
}

function readWriteHeaders(req: Request) {
  const rangeHeader = req.headers[headerKey(HEADERS.contentRange)];
  const range = rangeHeader === undefined ? null : parseContentRange(rangeHeader);
  const lengthHeader = req.headers['content-length'];
  const chunked = /(^|,)\s*chunked\s*$/i.test(req.headers['transfer-encoding'] ?? '');
  let declaredLength: number | null = null;
  if (lengthHeader !== undefined) declaredLength = Number(lengthHeader);
  else if (!chunked) throw ServiceError.of('lengthRequired');
  const contentType = contentTypeOf(req);
  const digestHeader = req.headers[headerKey(HEADERS.contentDigest)];
  const digests = digestHeader === undefined ? {} : parseContentDigest(String(digestHeader));
  return {
    range,
    declaredLength,
    contentType,
    sha256: digests['sha-256'] ?? null,
    crc64nvme: digests.crc64nvme ?? null,
  };
}

/** The headers of a finished content, from S3's answer for its object. */
function setObjectHeaders(res: Response, info: ObjectInfo, length: number): void {
  setDownloadSafetyHeaders(res);
  res.setHeader('Content-Type', info.contentType);
  res.setHeader('Content-Length', String(length));
  res.setHeader('Accept-Ranges', 'bytes');
  if (info.etag) res.setHeader('ETag', info.etag);
  if (info.lastModified) res.setHeader('Last-Modified', info.lastModified.toUTCString());
  if (Object.keys(info.digests).length > 0) res.setHeader(HEADERS.reprDigest, formatDigest(info.digests));
}
