import type { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import { ServiceError } from '@cp/errors';
import { MAX_CONTENT_SIZE, PART_SIZE } from '@cp/protocol';
import { isValidMediaType } from '@cp/service-kit';
import type { DownloadService } from '../downloads/DownloadService';
import type { ObjectInfo } from '../store/ObjectStore';
import type { StageTimings } from '../uploads/UploadMetrics';
import type { UploadService } from '../uploads/UploadService';
import { BodySlices, ChecksumCheck } from './bodySlices';
import type { UploadMetadata } from './tusHeaders';

/** The S3 user metadata name the Upload-Metadata of a tus creation is kept under. */
const METADATA_NAME = 'tus-metadata';

/** The S3 user metadata name of a tus concatenation's part: `partial`, or `final;<id> <id> ...`. */
const CONCAT_NAME = 'tus-concat';

/** The most partial uploads one final upload concatenates (their ids travel in its S3 metadata). */
export const MAX_CONCAT_PARTS = 16;

/** Metadata keys tus clients name a file's media type with (tus-js-client, Uppy), in that order. */
const TYPE_KEYS = ['filetype', 'type', 'contentType', 'content-type', 'mimetype'];

/** Who sends a request, as the contents keep it. */
export interface Sender {
  uploader: string | null;
  uploaderCertificate: string | null;
}

/** Where a tus upload stands: its offset (the bytes stored from its start), its length, its life. */
export interface TusUploadState {
  offset: number;
  length: number | null;
  /** When an unfinished upload is removed if nothing more comes; null once the content is ready. */
  expiresAt: Date | null;
  /** The creation's Upload-Metadata, as sent. */
  metadata: string | null;
  completed: boolean;
  /** A ready content's whole-object digests (its Repr-Digest). */
  digests?: ObjectInfo['digests'];
  /** Its part in a concatenation: a partial upload, or a final one with the ids of its partials. */
  concat?: { kind: 'partial' } | { kind: 'final'; ids: string[] };
}

export interface Append extends Sender {
  offset: number;
  length: number;
  body: Readable;
  checksum: { algorithm: string; digest: Buffer } | null;
  /** An Upload-Length the request names too: it must be the upload's (409 otherwise, before any byte is kept). */
  namedLength?: number | null;
  timings: StageTimings;
}

/**
 * tus 1.0 over the contents: a tus upload is a content of the /v1 API (same id, same store), seen
 * in order. Its offset is the length of the run of bytes stored from byte 0, read from the upload's
 * bookkeeping each time, so it never names a byte that is not stored. A PATCH is cut at the 64 MiB
 * part grid and each slice is written as a range of the content as it streams: an aligned slice
 * goes straight into its S3 part, and a PATCH broken off keeps every slice finished before the
 * break (its offset says so), so the client sends only the rest again.
 */
export class TusDoor {
  constructor(
    private readonly uploads: UploadService,
    private readonly downloads: DownloadService,
  ) {}

  /**
   * Creation: a new content of `length` bytes (null: deferred, named by a later PATCH) with no
   * bytes yet; its id. Its media type is `contentType`, else the one its tus metadata names.
   */
  async create(
    ownerId: string,
    length: number | null,
    metadata: UploadMetadata | null,
    sender: Sender,
    contentType: string | null = null,
    partial = false,
  ): Promise<string> {
    if (length !== null && length > MAX_CONTENT_SIZE)
      throw ServiceError.of(
        'contentTooLarge',
        `Upload-Length ${length} is past the content limit of ${MAX_CONTENT_SIZE} bytes`,
      );
    return this.uploads.begin({
      ownerId,
      total: length,
      contentType: contentType ?? (metadata ? contentTypeOf(metadata) : null),
      ...sender,
      metadata: {
        ...(metadata && metadata.raw !== '' ? { [METADATA_NAME]: metadata.raw } : {}),
        ...(partial ? { [CONCAT_NAME]: 'partial' } : {}),
      },
    });
  }

  /**
   * Concatenation: a new content (a final upload) of the bytes of `partials`, finished partial
   * uploads of this owner, in that order. Each partial's object is read from S3 and appended as a
   * PATCH body is (cut at the 64 MiB grid, aligned parts straight into theirs), so memory does not
   * grow with their size; the partials are removed once the final upload is complete. Its id.
   */
  async concatenate(
    ownerId: string,
    partials: string[],
    metadata: UploadMetadata | null,
    sender: Sender,
    timings: StageTimings,
  ): Promise<string> {
    const lengths: number[] = [];
    for (const id of partials) {
      const state = await this.state(ownerId, id).catch((error: unknown) => {
        if (error instanceof ServiceError && error.status === 404)
          throw ServiceError.of('invalidUploadConcat', `Upload-Concat names ${id}, which is no upload of this owner`);
        throw error;
      });
      if (state.concat?.kind !== 'partial')
        throw ServiceError.of('invalidUploadConcat', `Upload-Concat names ${id}, which is not a partial upload`);
      if (!state.completed)
        throw ServiceError.of(
          'invalidUploadConcat',
          `the partial upload ${id} is not finished (${state.offset} bytes)`,
        );
      lengths.push(state.offset);
    }
    const total = lengths.reduce((a, b) => a + b, 0);
    if (total > MAX_CONTENT_SIZE)
      throw ServiceError.of('contentTooLarge', `the partial uploads hold ${total} bytes, past the content limit`);
    const id = await this.uploads.begin({
      ownerId,
      total,
      contentType: metadata ? contentTypeOf(metadata) : null,
      ...sender,
      metadata: {
        ...(metadata && metadata.raw !== '' ? { [METADATA_NAME]: metadata.raw } : {}),
        [CONCAT_NAME]: `final;${partials.join(' ')}`,
      },
    });
    let offset = 0;
    for (const [i, partial] of partials.entries()) {
      const length = lengths[i]!;
      if (length === 0) continue;
      const download = await this.downloads.open(ownerId, partial, null, new AbortController().signal);
      try {
        const now = await this.state(ownerId, id);
        await this.appendAt(ownerId, id, now, {
          ...sender,
          offset,
          length,
          body: download.body!,
          checksum: null,
          timings,
        });
      } finally {
        download.body?.destroy(); // read to its end already, unless the append failed
      }
      offset += length;
    }
    // Their bytes are the final upload's now (as tus allows, the server removes them).
    for (const partial of partials) await this.uploads.remove(ownerId, partial).catch(() => undefined);
    return id;
  }

  /** HEAD: the offset, length and expiry of an upload of this owner (404 for any other). */
  async state(ownerId: string, id: string): Promise<TusUploadState> {
    const status = await this.downloads.status(ownerId, id);
    if (status.state === 'ready') {
      const total = status.info.contentLength;
      const metadata = status.info.metadata[METADATA_NAME] ?? null;
      return {
        offset: total,
        length: total,
        expiresAt: null,
        metadata,
        completed: true,
        digests: status.info.digests,
        ...concatOf(status.info.metadata[CONCAT_NAME]),
      };
    }
    const first = status.received[0];
    return {
      offset: first && first.start === 0 ? first.end + 1 : 0,
      length: status.total,
      expiresAt: status.record.expiresAt,
      metadata: status.record.metadata?.[METADATA_NAME] ?? null,
      completed: false,
      ...concatOf(status.record.metadata?.[CONCAT_NAME]),
    };
  }

  /** PATCH: the body's bytes at `offset`, which must be the upload's offset now (409 otherwise). */
  async append(ownerId: string, id: string, append: Append): Promise<TusUploadState & { completedNow: boolean }> {
    const now = await this.state(ownerId, id);
    if (now.concat?.kind === 'final')
      throw ServiceError.of(
        'finalUploadNotPatchable',
        'a final upload is made of its partial uploads: it takes no PATCH',
      );
    return this.appendAt(ownerId, id, now, append);
  }

  /** The bytes of `append` stored at the upload's offset, `now` being its state. */
  private async appendAt(
    ownerId: string,
    id: string,
    now: TusUploadState,
    append: Append,
  ): Promise<TusUploadState & { completedNow: boolean }> {
    if (append.offset !== now.offset)
      throw ServiceError.of(
        'uploadOffsetMismatch',
        `the upload holds ${now.offset} bytes from its start: Upload-Offset ${append.offset} is not where it goes on (ask with HEAD)`,
      );
    const end = append.offset + append.length;
    // A deferred length is named by a PATCH (creation-defer-length), once, as the upload's.
    const named = append.namedLength ?? null;
    if (named !== null && now.length !== null && named !== now.length)
      throw ServiceError.of('totalConflict', `Upload-Length ${named} differs from the upload's ${now.length}`);
    const length = now.length ?? named;
    if (length !== null && end > length)
      throw ServiceError.of('rangePastTotal', `the PATCH ends at byte ${end}, past the Upload-Length of ${length}`);
    if (end > MAX_CONTENT_SIZE)
      throw ServiceError.of(
        'contentTooLarge',
        `the PATCH ends at byte ${end}, past the content limit of ${MAX_CONTENT_SIZE} bytes`,
      );
    if (now.length === null && length === 0)
      throw ServiceError.of(
        'invalidUploadLength',
        'an upload of 0 bytes is created with Upload-Length: 0, not deferred',
      );
    const slices = cutAtParts(append.offset, end);
    if (append.checksum && slices.length > 1)
      throw ServiceError.of(
        'checksumSpansParts',
        `bytes ${append.offset} to ${end - 1} cross a 64 MiB part boundary; a checksummed PATCH must lie within one part`,
      );
    const body = new BodySlices(append.body);
    // Each slice's write goes on (S3's answer, the commit) while the next slice streams: two at
    // most, so that the client is not held between parts. The first failure stops any further slice.
    const writes: Promise<boolean>[] = [];
    let failure: unknown = null;
    for (const [start, stop] of slices) {
      const check = append.checksum ? new ChecksumCheck(append.checksum.algorithm, append.checksum.digest) : null;
      const slice = body.next(stop - start);
      const sent = finished(slice).catch(() => undefined);
      const write = this.uploads
        .write({
          ownerId,
          contentId: id,
          range: { start, end: stop - 1, total: length },
          declaredLength: stop - start,
          contentType: null,
          uploader: append.uploader,
          uploaderCertificate: append.uploaderCertificate,
          body: check ? check.of(slice) : slice,
          timings: append.timings,
        })
        .then(
          (outcome) => outcome.completedNow,
          (error: unknown) => {
            failure ??= check?.mismatch
              ? ServiceError.of('uploadChecksumMismatch', undefined, { cause: error })
              : error;
            return false;
          },
        );
      writes.push(write);
      await Promise.race([write, sent]);
      if (writes.length > 1) await writes[writes.length - 2];
      if (failure !== null) break;
    }
    let completedNow = (await Promise.all(writes)).some(Boolean);
    if (failure !== null) throw failure;
    const offset = slices.length > 0 ? end : append.offset;
    // A length named by a PATCH with no bytes (its last bytes came before it): the total alone.
    if (now.length === null && length !== null && slices.length === 0)
      completedNow = (await this.uploads.nameTotal(ownerId, id, length, append.timings)).completedNow;
    const completed = offset === length;
    return { ...now, offset, length, completed, completedNow, expiresAt: completed ? null : now.expiresAt };
  }

  /** Termination: the content removed, finished or not (as DELETE on /v1). */
  terminate(ownerId: string, id: string): Promise<void> {
    return this.uploads.remove(ownerId, id);
  }
}

/** [start, end) cut at multiples of the part size: the slices a PATCH is written as. */
export function cutAtParts(start: number, end: number): [number, number][] {
  const out: [number, number][] = [];
  for (let at = start; at < end;) {
    const stop = Math.min(end, (Math.floor(at / PART_SIZE) + 1) * PART_SIZE);
    out.push([at, stop]);
    at = stop;
  }
  return out;
}

/** A content's part in a concatenation, from its `tus-concat` metadata. */
function concatOf(value: string | undefined): Pick<TusUploadState, 'concat'> {
  if (value === 'partial') return { concat: { kind: 'partial' } };
  if (value?.startsWith('final;')) return { concat: { kind: 'final', ids: value.slice(6).split(' ').filter(Boolean) } };
  return {};
}

function contentTypeOf(metadata: UploadMetadata): string | null {
  for (const key of TYPE_KEYS) {
    const value = metadata.values.get(key)?.toString('latin1');
    if (value && isValidMediaType(value)) return value;
  }
  return null;
}
