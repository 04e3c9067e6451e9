import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import { ServiceError } from '@cp/errors';
import type { ContentRange } from '@cp/ranges';
import type { ContentRecord, ContentRepository } from '../store/ContentRepository';
import { isNotFound, type ObjectStore } from '../store/ObjectStore';
import { exactBody } from './exactBody';
import { MAX_CONTENT_SIZE, PART_SIZE, PartGrid, partKey } from './PartGrid';
import { streamsEqual } from './streamsEqual';

export type Clock = () => Date;

export interface UploadServiceOptions {
  /** How long an unfinished upload lives before the sweeper removes it. */
  uploadTtlMs: number;
  /** How long a completion may stay claimed before another request takes it over. */
  completionLeaseMs: number;
  clock?: Clock;
}

/** One write request: a POST (contentId null) or a PUT of a range, with its body. */
export interface WriteRequest {
  ownerId: string;
  contentId: string | null;
  /** Null for a one-shot POST of the whole content. */
  range: ContentRange | null;
  /** The body length the client announced; null for a chunked body. */
  declaredLength: number | null;
  contentType: string | null;
  body: Readable;
}

export interface WriteOutcome {
  id: string;
  /** True when this request completed the content (answered 201 on a PUT). */
  completedNow: boolean;
  /** Whether the content is ready after this request. */
  completed: boolean;
}

const DEFAULT_CONTENT_TYPE = 'application/octet-stream';

/**
 * Takes uploads: maps each part onto its S3 multipart part, records it in the content's one
 * document, and decides completion with a single atomic update so exactly one request wins.
 */
export class UploadService {
  private readonly clock: Clock;

  constructor(
    private readonly contents: ContentRepository,
    private readonly objects: ObjectStore,
    private readonly options: UploadServiceOptions,
  ) {
    this.clock = options.clock ?? (() => new Date());
  }

  async write(request: WriteRequest): Promise<WriteOutcome> {
    if (request.range === null) {
      if (request.contentId !== null) throw ServiceError.badRequest('missingContentRange', 'Content-Range is required on PUT');
      return this.writeWhole(request);
    }
    const { start, end, total } = request.range;
    const length = end - start + 1;
    if (length > PART_SIZE) throw new ServiceError(413, 'partTooLarge', `a part may carry at most ${PART_SIZE} bytes; this one carries ${length}`);
    if (total !== null && total > MAX_CONTENT_SIZE) throw new ServiceError(413, 'contentTooLarge', `a content may be at most ${MAX_CONTENT_SIZE} bytes`);
    if (end >= MAX_CONTENT_SIZE) throw new ServiceError(413, 'contentTooLarge', `byte ${end} lies past the content limit of ${MAX_CONTENT_SIZE} bytes`);
    if (request.declaredLength !== null && request.declaredLength !== length) {
      throw ServiceError.badRequest('bodyLengthMismatch', `Content-Length ${request.declaredLength} differs from the ${length} bytes Content-Range names`);
    }
    if (request.contentId === null) return this.createWithPart(request, request.range);
    return this.writePart(request, request.contentId, request.range);
  }

  /** POST without Content-Range: the body is the whole content, stored with one PutObject. */
  private async writeWhole(request: WriteRequest): Promise<WriteOutcome> {
    if (request.declaredLength === null) throw new ServiceError(411, 'lengthRequired', 'a POST without Content-Range needs Content-Length');
    if (request.declaredLength > PART_SIZE) {
      throw new ServiceError(413, 'partTooLarge', `a single-request upload may carry at most ${PART_SIZE} bytes; send larger contents in parts with Content-Range`);
    }
    return this.storeWhole(request, request.declaredLength);
  }

  private async storeWhole(request: WriteRequest, total: number): Promise<WriteOutcome> {
    const id = randomUUID();
    const contentType = request.contentType ?? DEFAULT_CONTENT_TYPE;
    const s3Key = contentKey(request.ownerId, id);
    const etag = await this.objects.putObject(s3Key, exactBody(request.body, total), total, contentType);
    const now = this.clock();
    await this.contents.insert({
      ...this.newRecord(id, request.ownerId, contentType, s3Key, null, total, now),
      state: 'ready',
      etag,
      completedAt: now,
    });
    return { id, completedNow: true, completed: true };
  }

  /** POST with Content-Range: a new content, created only once its first part is stored. */
  private async createWithPart(request: WriteRequest, range: ContentRange): Promise<WriteOutcome> {
    if (range.start === 0 && range.total !== null && range.end === range.total - 1) return this.storeWhole(request, range.total);
    const k = PartGrid.alignedPartNumber(range.start, range.end, range.total);
    if (k === null) throw unalignedPart(range);
    const id = randomUUID();
    const contentType = request.contentType ?? DEFAULT_CONTENT_TYPE;
    const s3Key = contentKey(request.ownerId, id);
    const uploadId = await this.objects.createMultipartUpload(s3Key, contentType);
    const length = range.end - range.start + 1;
    let etag: string;
    try {
      etag = await this.objects.uploadPart(s3Key, uploadId, k, exactBody(request.body, length), length);
    } catch (error) {
      await this.objects.abortMultipartUpload(s3Key, uploadId).catch(() => undefined);
      throw error;
    }
    const now = this.clock();
    await this.contents.insert({
      ...this.newRecord(id, request.ownerId, contentType, s3Key, uploadId, range.total, now),
      parts: { [partKey(k)]: { etag, size: length, at: now } },
      partCount: 1,
    });
    return { id, completedNow: false, completed: false };
  }

  private async writePart(request: WriteRequest, id: string, range: ContentRange): Promise<WriteOutcome> {
    let record = await this.requireRecord(request.ownerId, id);
    if (record.state === 'completing') record = await this.resumeStuckCompletion(record);
    if (record.state === 'ready') return this.rewriteReady(request, record, range);

    const total = await this.settleTotal(record, range);
    if (total !== null && range.end >= total) {
      throw ServiceError.badRequest('rangePastTotal', `Content-Range end ${range.end} is not below the content's total ${total}`);
    }
    const k = PartGrid.alignedPartNumber(range.start, range.end, total);
    if (k === null) throw unalignedPart(range);
    const length = range.end - range.start + 1;
    const etag = await this.objects.uploadPart(record.s3Key, record.uploadId!, k, exactBody(request.body, length), length);
    const recorded = await this.contents.recordPart(id, k, { etag, size: length, at: this.clock() });
    if (!recorded) {
      // The content left 'uploading' while this part was on its way: it was completed by others.
      const now = await this.requireRecord(request.ownerId, id);
      return { id, completedNow: false, completed: now.state === 'ready' };
    }
    if (total === null) return { id, completedNow: false, completed: false };
    const completedNow = await this.tryComplete(id, total);
    return { id, completedNow, completed: completedNow };
  }

  /**
   * Reconciles the total this request names with the one stored: the first to name it sets it,
   * a different one later is a conflict, and a total below data already received is too.
   */
  private async settleTotal(record: ContentRecord, range: ContentRange): Promise<number | null> {
    if (range.total === null) return record.total;
    if (record.total !== null) {
      if (record.total !== range.total) throw totalConflict(record.total, range.total);
      return record.total;
    }
    const receivedEnd = Math.max(-1, ...Object.entries(record.parts).map(([key, p]) => PartGrid.partRange(Number(key.slice(1)), null).start + p.size - 1));
    if (receivedEnd >= range.total) {
      throw ServiceError.conflict('totalConflict', `the total ${range.total} is smaller than the ${receivedEnd + 1} bytes already received`);
    }
    const stored = await this.contents.declareTotal(record._id, range.total, this.clock());
    if (stored !== range.total) throw totalConflict(stored ?? 0, range.total);
    return stored;
  }

  /** A write to a finished content is a harmless retry when its bytes are the stored ones. */
  private async rewriteReady(request: WriteRequest, record: ContentRecord, range: ContentRange): Promise<WriteOutcome> {
    const total = record.total!;
    if (range.total !== null && range.total !== total) throw totalConflict(total, range.total);
    if (range.end >= total) throw ServiceError.badRequest('rangePastTotal', `Content-Range end ${range.end} is not below the content's total ${total}`);
    const length = range.end - range.start + 1;
    const stored = await this.objects.getRange(record.s3Key, range.start, range.end);
    if (!(await streamsEqual(exactBody(request.body, length), stored.body))) {
      throw ServiceError.conflict('contentAlreadyComplete', 'the content is complete and these bytes differ from the stored ones');
    }
    return { id: record._id, completedNow: false, completed: true };
  }

  private async tryComplete(id: string, total: number): Promise<boolean> {
    const claimed = await this.contents.claimCompletion(id, total, PartGrid.partCount(total), this.clock());
    if (!claimed) return false;
    await this.finishCompletion(claimed);
    return true;
  }

  /** Finishes a completion claimed earlier by a request that did not get to the end of it. */
  async resumeStuckCompletion(record: ContentRecord): Promise<ContentRecord> {
    const now = this.clock();
    const claimed = await this.contents.claimStuckCompletion(record._id, new Date(now.getTime() - this.options.completionLeaseMs), now);
    if (claimed) await this.finishCompletion(claimed);
    return this.requireRecord(record.ownerId, record._id);
  }

  private async finishCompletion(record: ContentRecord): Promise<void> {
    const parts = Object.entries(record.parts)
      .map(([key, p]) => ({ partNumber: Number(key.slice(1)), etag: p.etag }))
      .sort((a, b) => a.partNumber - b.partNumber);
    let etag: string;
    try {
      etag = await this.objects.completeMultipartUpload(record.s3Key, record.uploadId!, parts);
    } catch (error) {
      // An earlier attempt may have completed the upload before it could record so.
      const existing = isNotFound(error) ? await this.objects.head(record.s3Key) : null;
      if (existing === null || existing.contentLength !== record.total) {
        await this.contents.releaseCompletion(record._id, this.clock());
        throw error;
      }
      etag = existing.etag;
    }
    await this.contents.markReady(record._id, etag, this.clock());
  }

  private async requireRecord(ownerId: string, id: string): Promise<ContentRecord> {
    const record = await this.contents.find(ownerId, id);
    if (!record) throw ServiceError.notFound('contentNotFound', `there is no content ${id} of owner ${ownerId}`);
    return record;
  }

  private newRecord(id: string, ownerId: string, contentType: string, s3Key: string, uploadId: string | null, total: number | null, now: Date): ContentRecord {
    return {
      _id: id,
      ownerId,
      state: 'uploading',
      total,
      contentType,
      s3Key,
      uploadId,
      parts: {},
      partCount: 0,
      etag: null,
      createdAt: now,
      updatedAt: now,
      expiresAt: new Date(now.getTime() + this.options.uploadTtlMs),
      completingSince: null,
      completedAt: null,
    };
  }
}

export function contentKey(ownerId: string, id: string): string {
  return `contents/${ownerId}/${id}`;
}

function totalConflict(stored: number, given: number): ServiceError {
  return ServiceError.conflict('totalConflict', `the content's total is ${stored}, not ${given}`);
}

function unalignedPart(range: ContentRange): ServiceError {
  return ServiceError.badRequest(
    'unalignedPart',
    `bytes ${range.start}-${range.end} do not form a ${PART_SIZE}-byte part on the part grid (or the final part)`,
  );
}
