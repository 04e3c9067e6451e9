import { Router, type Request, type RequestHandler, type Response } from 'express';
import { ServiceError } from '@cp/errors';
import { MAX_CONTENT_SIZE } from '@cp/protocol';
import { declaredBodyLength, requireOwner, requireUuid, senderOf } from '../http/v1Requests';
import { timingsOf } from '../uploads/UploadMetrics';
import { MAX_CONCAT_PARTS, type TusDoor, type TusUploadState } from './TusDoor';
import {
  isOffsetOctetStream,
  parseChecksum,
  parseConcat,
  parseMetadata,
  TUS_CHECKSUMS,
  TUS_EXTENSIONS,
  TUS_VERSION,
  uploadLengthOf,
  uploadOffsetOf,
} from './tusHeaders';

const UPLOADS = '/:ownerId/tus';
const UPLOAD = '/:ownerId/tus/:uploadId';

/**
 * tus 1.0 discovery (OPTIONS), answered before any credential is asked for: it says only what
 * this door offers. Mounted ahead of authentication.
 */
export function tusDiscovery(): Router {
  const router = Router();
  router.options([UPLOADS, UPLOAD], function tusOptions(_req, res) {
    res.setHeader('Tus-Resumable', TUS_VERSION);
    res.setHeader('Tus-Version', TUS_VERSION);
    res.setHeader('Tus-Extension', TUS_EXTENSIONS.join(','));
    res.setHeader('Tus-Max-Size', String(MAX_CONTENT_SIZE));
    res.setHeader('Tus-Checksum-Algorithm', Object.keys(TUS_CHECKSUMS).join(','));
    res.status(204).end();
  });
  return router;
}

/**
 * The tus 1.0 door at /v1/{ownerId}/tus: creation (with upload), offset by HEAD, PATCH, termination,
 * expiration and checksums, over the same contents, credentials, quotas, audit and events as /v1.
 * Its errors are /v1's (JSON), with tus's statuses (409 offset, 412 version, 415 type, 460 checksum).
 */
export function tusRouter(door: TusDoor): Router {
  const router = Router();
  router.use([UPLOADS, UPLOAD], tusRequest);

  router.post(UPLOADS, async function tusCreate(req, res) {
    const ownerId = requireOwner(req);
    const concat = parseConcat(req.headers['upload-concat'], ownerId, MAX_CONCAT_PARTS);
    if (concat?.kind === 'final') return tusConcatenate(req, res, ownerId, concat.ids);
    const length = uploadLengthOf(req.headers['upload-length']);
    const deferred = req.headers['upload-defer-length'];
    if (deferred !== undefined && (deferred !== '1' || length !== null))
      throw ServiceError.of('invalidUploadLength', 'Upload-Defer-Length must be 1, and comes without Upload-Length');
    if (length === null && deferred === undefined)
      throw ServiceError.of('invalidUploadLength', 'a creation needs Upload-Length (or Upload-Defer-Length: 1)');
    const metadata = parseMetadata(req.headers['upload-metadata']);
    const bodyLength = declaredBodyLength(req, 'tus');
    if (bodyLength > 0 && !isOffsetOctetStream(req.headers['content-type'])) throw ServiceError.of('invalidPatchType');
    const checksum = parseChecksum(req.headers['upload-checksum']);
    const sender = senderOf(req);
    const id = await door.create(ownerId, length, metadata, sender, null, concat?.kind === 'partial');
    res.locals.contentId = id; // for its audit record
    res.setHeader('Location', `/v1/${ownerId}/tus/${id}`);
    let state: TusUploadState & { completedNow?: boolean };
    if (bodyLength > 0) {
      // creation-with-upload: the body is the upload's first bytes.
      state = await door.append(ownerId, id, {
        ...sender,
        offset: 0,
        length: bodyLength,
        body: req,
        checksum,
        timings: timingsOf(res),
      });
    } else {
      state = await door.state(ownerId, id);
    }
    res.locals.completed = state.completed;
    setState(res, ownerId, state, false);
    // Where the write's time went, as /v1 writes answer it (stages: docs/api.md).
    res.setHeader('Server-Timing', timingsOf(res).header());
    res.status(201).end();
  });

  /** concatenation: a final upload of finished partial uploads, complete when answered. */
  async function tusConcatenate(req: Request, res: Response, ownerId: string, partials: string[]): Promise<void> {
    if (req.headers['upload-length'] !== undefined || req.headers['upload-defer-length'] !== undefined)
      throw ServiceError.of('invalidUploadConcat', 'a final upload takes its length from its partial uploads');
    if (declaredBodyLength(req, 'tus') > 0)
      throw ServiceError.of('invalidUploadConcat', 'a final upload has no body: its bytes are its partial uploads');
    const metadata = parseMetadata(req.headers['upload-metadata']);
    const id = await door.concatenate(ownerId, partials, metadata, senderOf(req), timingsOf(res));
    res.locals.contentId = id; // for its audit record
    const state = await door.state(ownerId, id);
    res.locals.completed = state.completed;
    res.setHeader('Location', `/v1/${ownerId}/tus/${id}`);
    setState(res, ownerId, state, false);
    res.status(201).end();
  }

  router.head(UPLOAD, async function tusOffset(req, res) {
    const ownerId = requireOwner(req);
    const id = requireUuid(String(req.params.uploadId), 'uploadId');
    const state = await door.state(ownerId, id);
    res.setHeader('Cache-Control', 'no-store');
    setState(res, ownerId, state, true);
    res.status(200).end();
  });

  router.patch(UPLOAD, async function tusAppend(req, res) {
    const ownerId = requireOwner(req);
    const id = requireUuid(String(req.params.uploadId), 'uploadId');
    if (!isOffsetOctetStream(req.headers['content-type'])) throw ServiceError.of('invalidPatchType');
    const offset = uploadOffsetOf(req.headers['upload-offset']);
    const checksum = parseChecksum(req.headers['upload-checksum']);
    const state = await door.append(ownerId, id, {
      ...senderOf(req),
      offset,
      length: declaredBodyLength(req, 'tus'),
      body: req,
      checksum,
      namedLength: uploadLengthOf(req.headers['upload-length']),
      timings: timingsOf(res),
    });
    res.locals.contentId = id;
    res.locals.completed = state.completedNow;
    setState(res, ownerId, state, false);
    // Where the write's time went, as /v1 writes answer it (stages: docs/api.md).
    res.setHeader('Server-Timing', timingsOf(res).header());
    res.status(204).end();
  });

  router.delete(UPLOAD, async function tusTerminate(req, res) {
    const ownerId = requireOwner(req);
    const id = requireUuid(String(req.params.uploadId), 'uploadId');
    await door.terminate(ownerId, id);
    res.status(204).end();
  });

  return router;
}

/**
 * Every tus request and answer carries Tus-Resumable; a request of another version gets 412. A
 * POST may name the method it stands for (X-HTTP-Method-Override), for clients behind proxies that
 * pass only GET and POST.
 */
const tusRequest: RequestHandler = (req, res, next) => {
  res.setHeader('Tus-Resumable', TUS_VERSION);
  const override = req.headers['x-http-method-override'];
  if (
    req.method === 'POST' &&
    typeof override === 'string' &&
    ['PATCH', 'DELETE', 'HEAD'].includes(override.toUpperCase())
  )
    req.method = override.toUpperCase();
  if (req.headers['tus-resumable'] !== TUS_VERSION) {
    res.setHeader('Tus-Version', TUS_VERSION);
    throw ServiceError.of(
      'tusVersionUnsupported',
      `Tus-Resumable must be ${TUS_VERSION}; this request sent ${JSON.stringify(req.headers['tus-resumable'] ?? null)}`,
    );
  }
  next();
};

function setState(res: Response, ownerId: string, state: TusUploadState, head: boolean): void {
  res.setHeader('Upload-Offset', String(state.offset));
  if (head && state.concat)
    res.setHeader(
      'Upload-Concat',
      state.concat.kind === 'partial'
        ? 'partial'
        : `final;${state.concat.ids.map((id) => `/v1/${ownerId}/tus/${id}`).join(' ')}`,
    );
  if (head && state.length !== null) res.setHeader('Upload-Length', String(state.length));
  if (head && state.length === null) res.setHeader('Upload-Defer-Length', '1');
  if (head && state.metadata) res.setHeader('Upload-Metadata', state.metadata);
  if (state.expiresAt && !state.completed) res.setHeader('Upload-Expires', state.expiresAt.toUTCString());
}
