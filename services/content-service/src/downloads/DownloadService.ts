import { ServiceError } from '@cp/errors';
import {
  formatContentRange,
  HEADERS,
  inS3Spelling,
  resolveRange,
  type RangeRequest,
  type ReceivedRange,
} from '@cp/protocol';
import { isRangeRefused, type ObjectInfo, type ObjectStore, type StoredObject } from '../store/ObjectStore';
import type { PresignedRequest, Presigner } from '../store/Presigner';
import type { UploadRecord } from '../store/UploadBook';
import { contentKey } from '../uploads/PartGrid';
import type { UploadStatusReader } from '../uploads/UploadCompletion';

/** A download as it is answered: S3's answer for the object, and what of it is served. */
export interface Download {
  info: ObjectInfo;
  /** 200 (whole content, or the API's own `bytes a-b/total` form) or 206 (RFC 9110 ranges). */
  status: 200 | 206;
  /** Inclusive byte range served, sent as Content-Range (any Range request); null without Range. */
  range: { start: number; end: number } | null;
  /** The bytes; null for an empty content. */
  body: StoredObject['body'] | null;
  length: number;
}

/** What HEAD tells: a finished content's object, or an unfinished upload's received ranges. */
export type ContentStatus =
  | { state: 'ready'; info: ObjectInfo }
  | { state: 'uploading'; record: UploadRecord; total: number | null; received: ReceivedRange[] };

/**
 * Serves finished contents straight from S3: their object is their record, so a GET is one
 * GetObject and a HEAD one HeadObject. Only when there is no object (the miss path) are the
 * unfinished uploads asked: 409 for one of the caller's owner, else 404.
 */
export class DownloadService {
  constructor(
    private readonly objects: ObjectStore,
    private readonly uploads: UploadStatusReader,
    /** Presigned GetObject URLs for downloads that ask for a redirect; null when direct transfer is not enabled. */
    private readonly presigner: Presigner | null = null,
  ) {}

  /** Whether a GET that prefers a redirect gets one. */
  get redirects(): boolean {
    return this.presigner !== null;
  }

  /**
   * A presigned GetObject of a ready content (409 while it uploads, 404 when there is none), bound
   * to the request's RFC 9110 Range header as sent; null when the request is better served as
   * before: the legacy `bytes a-b/total` form, a range not in S3's spelling (`BYTES=`), `bytes=-0`, or a range the content cannot satisfy
   * (answered 416 by the service), or direct transfer not enabled.
   */
  async redirect(
    ownerId: string,
    id: string,
    range: RangeRequest | null,
    rangeHeader?: string,
  ): Promise<PresignedRequest | null> {
    if (!this.presigner) return null;
    // S3 reads only its own spelling of a range: any other is served here.
    if (range && (range.form === 'legacy' || !rangeHeader || !inS3Spelling(rangeHeader))) return null;
    const info = await this.ready(ownerId, id);
    if (range && !resolveRange(range, info.contentLength).satisfiable) return null;
    return this.presigner.getObject(contentKey(ownerId, id), range ? rangeHeader!.trim() : undefined);
  }

  async status(ownerId: string, id: string): Promise<ContentStatus> {
    const key = contentKey(ownerId, id);
    const info = await this.objects.head(key);
    if (info) return { state: 'ready', info };
    const record = await this.miss(ownerId, id);
    const again = record === 'ready' || record.completedNow ? await this.objects.head(key) : null;
    if (again) return { state: 'ready', info: again };
    if (record === 'ready') throw ServiceError.of('contentNotFound', `there is no content ${id} of owner ${ownerId}`);
    const { total, ranges } = await this.uploads.received(record);
    return { state: 'uploading', record, total, received: ranges.map(({ a, b }) => ({ start: a, end: b })) };
  }

  /**
   * A ready content's object, as one HeadObject finds it; 409 `contentNotReady` while the content
   * is still being uploaded, 404 when there is neither.
   */
  async ready(ownerId: string, id: string): Promise<ObjectInfo> {
    const key = contentKey(ownerId, id);
    const info = await this.objects.head(key);
    if (info) return info;
    const record = await this.miss(ownerId, id);
    const again = record === 'ready' || record.completedNow ? await this.objects.head(key) : null;
    if (again) return again;
    if (record === 'ready') throw ServiceError.of('contentNotFound', `there is no content ${id} of owner ${ownerId}`);
    throw ServiceError.of('contentNotReady');
  }

  async open(ownerId: string, id: string, range: RangeRequest | null, signal: AbortSignal): Promise<Download> {
    const key = contentKey(ownerId, id);
    // `bytes=-0` names no byte at all; S3 servers differ on it.
    if (range?.form === 'rfc-suffix' && range.length === 0) return this.openResolved(ownerId, id, range, signal);
    const s3Range = range === null ? undefined : toS3Range(range);
    // S3 names an object's checksums only when it serves it whole: a ranged GET asks a HeadObject
    // at the same time for the whole content's digests (and does without them if that fails).
    const digests =
      range === null
        ? null
        : this.objects.head(key).then(
            (info) => info?.digests ?? {},
            () => ({}),
          );
    let got;
    try {
      got = await this.objects.get(key, s3Range, signal);
      if (!got) {
        const record = await this.miss(ownerId, id);
        if (record !== 'ready' && !record.completedNow) throw ServiceError.of('contentNotReady');
        got = await this.objects.get(key, s3Range, signal);
        if (!got) throw ServiceError.of('contentNotFound', `there is no content ${id} of owner ${ownerId}`);
      }
    } catch (error) {
      if (!isRangeRefused(error) || range === null) throw error;
      return this.openResolved(ownerId, id, range, signal);
    }
    if (range !== null && !got.ranged) {
      // Served whole, as some servers answer a range of an empty object: resolved here instead.
      got.body.destroy();
      return this.openResolved(ownerId, id, range, signal);
    }
    if (digests) got.info.digests = { ...(await digests), ...got.info.digests };
    return this.answer(range, got.info.contentLength, got, got.start);
  }

  /** A range S3 would not serve as asked: resolved against the object's size (416, or the bytes it names). */
  private async openResolved(ownerId: string, id: string, range: RangeRequest, signal: AbortSignal): Promise<Download> {
    const key = contentKey(ownerId, id);
    const info = await this.objects.head(key);
    if (!info) {
      const record = await this.miss(ownerId, id);
      throw record === 'ready'
        ? ServiceError.of('contentNotFound', `there is no content ${id} of owner ${ownerId}`)
        : ServiceError.of('contentNotReady');
    }
    const total = info.contentLength;
    const resolved = resolveRange(range, total);
    if (!resolved.satisfiable) throw notSatisfiable(total);
    const stored = await this.objects.getRange(key, resolved.start, resolved.end, signal);
    return this.answer(range, total, { ...stored, info }, resolved.start);
  }

  private answer(
    range: RangeRequest | null,
    total: number,
    got: StoredObject & { info: ObjectInfo },
    start: number,
  ): Download {
    const info = { ...got.info, contentLength: total };
    if (range?.form === 'legacy' && range.total !== null && range.total !== total) {
      got.body.destroy();
      throw ServiceError.of(
        'rangeTotalMismatch',
        `the range names a total of ${range.total} bytes; the content has ${total}`,
        {
          headers: { [HEADERS.contentRange]: formatContentRange(null, total) },
        },
      );
    }
    const length = got.contentLength;
    if (length === 0) got.body.destroy();
    return {
      info,
      status: range === null || range.form === 'legacy' ? 200 : 206,
      range: range === null ? null : { start, end: start + length - 1 },
      body: length === 0 ? null : got.body,
      length,
    };
  }

  /**
   * No object: the caller's unfinished upload, its completion finished first if it was left
   * undone (`completedNow`); 'ready' when its object appeared meanwhile (completed between the
   * two reads); 404 when there is neither.
   */
  private async miss(ownerId: string, id: string): Promise<(UploadRecord & { completedNow: boolean }) | 'ready'> {
    const record = await this.uploads.find(ownerId, id);
    if (!record) {
      if (await this.objects.head(contentKey(ownerId, id))) return 'ready';
      throw ServiceError.of('contentNotFound', `there is no content ${id} of owner ${ownerId}`);
    }
    return { ...record, completedNow: await this.uploads.finishIfComplete(record) };
  }
}

function toS3Range(range: RangeRequest): string | undefined {
  if (range.form === 'rfc-suffix') return range.length === 0 ? 'bytes=-0' : `bytes=-${range.length}`;
  if (range.form === 'rfc') return `bytes=${range.first}-${range.last ?? ''}`;
  return `bytes=${range.first}-${range.last}`;
}

function notSatisfiable(total: number): ServiceError {
  return ServiceError.of(
    'rangeNotSatisfiable',
    total === 0
      ? 'the content is empty: no range of it can be served; GET it without Range'
      : `the content has ${total} bytes; the range starts past its end`,
    { headers: { [HEADERS.contentRange]: formatContentRange(null, total) } },
  );
}
