import { Router, type Request, type RequestHandler, type Response } from 'express';
import { ServiceError } from '@cp/errors';
import { formatDigest, HEADERS, MAX_CONTENT_SIZE, PART_SIZE } from '@cp/protocol';
import { contentTypeOf, declaredBodyLength, requireOwner, requireUuid, senderOf } from '../http/v1Requests';
import { timingsOf } from '../uploads/UploadMetrics';
import type { TusDoor, TusUploadState } from './TusDoor';
import { uploadLengthOf, uploadOffsetOf } from './tusHeaders';

const CREATE = '/:ownerId/resumable';
const UPLOAD = '/:ownerId/resumable/:uploadId';

/** The media type of an append's body. */
export const PARTIAL_UPLOAD = 'application/partial-upload';

/**
 * The draft interop versions spoken (`Upload-Draft-Interop-Version`): 6 is draft -05, which
 * tus-js-client's `ietf-draft-05` protocol sends; 7 drafts -06 to -08; 8 the drafts since -09.
 * A request without the header is taken as the current draft's.
 */
export const INTEROP_VERSIONS = ['6', '7', '8'] as const;
const CURRENT_INTEROP = '8';

/**
 * The IETF resumable upload (draft-ietf-httpbis-resumable-upload) discovery: OPTIONS names the
 * append media type and the limits, before any credential is asked for. Mounted ahead of
 * authentication.
 */
export function resumableDiscovery(): Router {
  const router = Router();
  router.options([CREATE, UPLOAD], function resumableOptions(req, res) {
    const version = interopOf(req, res);
    res.setHeader('Accept-Patch', PARTIAL_UPLOAD);
    res.setHeader('Upload-Limit', uploadLimit(version, null));
    res.status(204).end();
  });
  return router;
}

/**
 * The IETF resumable upload door at /v1/{ownerId}/resumable, over the same contents as tus and
 * /v1 (one store, one id: `Location` is `/v1/{ownerId}/resumable/{contentId}`, the content is read
 * back at `/v1/{ownerId}/contents/{contentId}`). Creation with `Upload-Complete` (and a first
 * body), the offset by HEAD, appends by PATCH `application/partial-upload`, cancellation by
 * DELETE. No 104 interim answer is sent (see docs/api.md): clients create first, then append.
 */
export function resumableRouter(door: TusDoor): Router {
  const router = Router();
  router.use([CREATE, UPLOAD], resumableRequest);

  router.post(CREATE, async function resumableCreate(req, res) {
    const ownerId = requireOwner(req);
    const complete = uploadCompleteOf(req);
    const bodyLength = declaredBodyLength(req, 'resumable upload');
    const length = lengthNamed(req, complete, 0, bodyLength);
    const contentType = contentTypeOf(req);
    const sender = senderOf(req);
    const id = await door.create(ownerId, length, null, sender, contentType);
    res.locals.contentId = id; // for its audit record
    res.setHeader('Location', `/v1/${ownerId}/resumable/${id}`);
    let state: TusUploadState;
    if (bodyLength > 0) {
      // The creation's body is the upload's first bytes.
      state = await door.append(ownerId, id, {
        ...sender,
        offset: 0,
        length: bodyLength,
        body: req,
        checksum: null,
        timings: timingsOf(res),
      });
    } else {
      state = await door.state(ownerId, id);
    }
    res.locals.completed = state.completed;
    setState(res, ownerId, id, await withDigests(door, ownerId, id, state));
    // Where the write's time went, as /v1 writes answer it (stages: docs/api.md).
    res.setHeader('Server-Timing', timingsOf(res).header());
    res.status(201).end();
  });

  router.head(UPLOAD, async function resumableOffset(req, res) {
    const ownerId = requireOwner(req);
    const id = requireUuid(String(req.params.uploadId), 'uploadId');
    const state = await door.state(ownerId, id);
    res.setHeader('Cache-Control', 'no-store');
    setState(res, ownerId, id, state);
    res.status(204).end();
  });

  router.patch(UPLOAD, async function resumableAppend(req, res) {
    const ownerId = requireOwner(req);
    const id = requireUuid(String(req.params.uploadId), 'uploadId');
    const type = req.headers['content-type'];
    if (type === undefined || type.split(';')[0]!.trim().toLowerCase() !== PARTIAL_UPLOAD)
      throw ServiceError.of('invalidPatchType', `an append's body must be Content-Type: ${PARTIAL_UPLOAD}`);
    const offset = uploadOffsetOf(req.headers['upload-offset']);
    const complete = uploadCompleteOf(req);
    const bodyLength = declaredBodyLength(req, 'resumable upload');
    const named = lengthNamed(req, complete, offset, bodyLength);
    let state: TusUploadState & { completedNow?: boolean };
    try {
      const now = bodyLength === 0 && complete ? await door.state(ownerId, id) : null;
      // Completing an upload the store completed already (its named length was all there): the same answer again.
      state =
        now?.completed && offset === now.offset
          ? now
          : await door.append(ownerId, id, {
              ...senderOf(req),
              offset,
              length: bodyLength,
              body: req,
              checksum: null,
              namedLength: named,
              timings: timingsOf(res),
            });
    } catch (error) {
      // A 409 names the offset the upload has reached, for the client to go on from.
      if (error instanceof ServiceError && error.code === 'uploadOffsetMismatch') {
        // Left out when the state cannot be read either (an empty Upload-Offset is no offset).
        const reached = await door.state(ownerId, id).catch(() => null);
        if (reached) res.setHeader('Upload-Offset', String(reached.offset));
      }
      throw error;
    }
    res.locals.contentId = id;
    res.locals.completed = state.completedNow ?? false;
    setState(res, ownerId, id, await withDigests(door, ownerId, id, state));
    // Where the write's time went, as /v1 writes answer it (stages: docs/api.md).
    res.setHeader('Server-Timing', timingsOf(res).header());
    res.status(state.completed ? 200 : 204).end();
  });

  router.delete(UPLOAD, async function resumableCancel(req, res) {
    const ownerId = requireOwner(req);
    const id = requireUuid(String(req.params.uploadId), 'uploadId');
    await door.terminate(ownerId, id);
    res.status(204).end();
  });

  return router;
}

/** The interop version of a request (400 for one not spoken), echoed in the answer. */
const resumableRequest: RequestHandler = (req, res, next) => {
  res.locals.interop = interopOf(req, res);
  next();
};

function interopOf(req: Request, res: Response): string {
  const sent = req.headers['upload-draft-interop-version'];
  if (sent === undefined) return CURRENT_INTEROP;
  const version = typeof sent === 'string' ? sent.trim() : '';
  if (!(INTEROP_VERSIONS as readonly string[]).includes(version))
    throw ServiceError.of(
      'interopVersionUnsupported',
      `Upload-Draft-Interop-Version ${JSON.stringify(sent)} is not one of ${INTEROP_VERSIONS.join(', ')}`,
    );
  res.setHeader('Upload-Draft-Interop-Version', version);
  return version;
}

/** Upload-Complete, a Structured Fields Boolean: required on creations and appends. */
function uploadCompleteOf(req: Request): boolean {
  const value = req.headers['upload-complete'];
  if (value === '?1') return true;
  if (value === '?0') return false;
  throw ServiceError.of(
    'invalidUploadComplete',
    value === undefined ? 'this request needs Upload-Complete (?0 or ?1)' : 'Upload-Complete must be ?0 or ?1',
  );
}

/**
 * The length a request names: its Upload-Length, and with `Upload-Complete: ?1` the offset plus its
 * body; both when both are there, and they must agree (409 `totalConflict`).
 */
function lengthNamed(req: Request, complete: boolean, offset: number, bodyLength: number): number | null {
  const header = uploadLengthOf(req.headers['upload-length']);
  const ending = complete ? offset + bodyLength : null;
  if (header !== null && ending !== null && header !== ending)
    throw ServiceError.of(
      'totalConflict',
      `Upload-Length ${header} differs from the ${ending} bytes this request completes the upload with`,
    );
  return header ?? ending;
}

/**
 * Upload-Limit: the largest content, and appends of whole 64 MiB parts (the last excepted), which
 * the store writes straight into their S3 parts; the time left of an unfinished upload, as
 * `max-age` (`expires` in draft -05).
 */
function uploadLimit(version: string, expiresAt: Date | null): string {
  const limits = [`max-size=${MAX_CONTENT_SIZE}`, `min-append-size=${PART_SIZE}`];
  if (expiresAt) {
    const seconds = Math.max(0, Math.floor((expiresAt.getTime() - Date.now()) / 1000));
    limits.push(`${version === '6' ? 'expires' : 'max-age'}=${seconds}`);
  }
  return limits.join(', ');
}

/** A completed upload's state with its content's digests (read again when the append did not have them). */
async function withDigests(door: TusDoor, ownerId: string, id: string, state: TusUploadState): Promise<TusUploadState> {
  return state.completed && !state.digests ? door.state(ownerId, id) : state;
}

/** The upload's state in its headers; once complete, where the content is read (and its digests). */
function setState(res: Response, ownerId: string, id: string, state: TusUploadState): void {
  const version = res.locals.interop as string;
  res.setHeader('Upload-Offset', String(state.offset));
  res.setHeader('Upload-Complete', state.completed ? '?1' : '?0');
  if (state.length !== null) res.setHeader('Upload-Length', String(state.length));
  res.setHeader('Upload-Limit', uploadLimit(version, state.completed ? null : state.expiresAt));
  if (state.completed) {
    res.setHeader('Content-Location', `/v1/${ownerId}/contents/${id}`);
    if (state.digests && Object.keys(state.digests).length > 0)
      res.setHeader(HEADERS.reprDigest, formatDigest(state.digests));
  }
}
