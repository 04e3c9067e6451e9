import { randomUUID } from 'node:crypto';
import type { ContentRange } from '@cp/ranges';
import type { ContentRecord } from '../store/ContentRepository';
import { exactBody } from './exactBody';
import { BodyLengthMismatch } from './ExactLengthStream';
import { contentKey } from './ObjectKeys';
import { PART_SIZE } from './PartGrid';
import type { RangeWriter } from './RangeWriter';
import type { StageTimings } from './StageTimings';
import type { UploadCleanup } from './UploadCleanup';
import type { UploadContext, WriteOutcome, WriteRequest } from './UploadContext';
import { wholeBodyTooLarge } from './WriteAdmission';

const DEFAULT_CONTENT_TYPE = 'application/octet-stream';

/** New contents: a whole one in one PutObject, or a multipart one that exists only if its first range is stored. */
export class ContentCreation {
  constructor(
    private readonly ctx: UploadContext,
    private readonly ranges: RangeWriter,
    private readonly cleanup: UploadCleanup,
  ) {}

  /** The whole content in one request, stored with one PutObject. */
  async storeWhole(request: WriteRequest, knownTotal: number | null): Promise<WriteOutcome> {
    const { objects, contents, clock } = this.ctx;
    const id = randomUUID();
    const contentType = request.contentType ?? DEFAULT_CONTENT_TYPE;
    const s3Key = contentKey(request.ownerId, id);
    let etag: string;
    let total: number;
    if (knownTotal !== null) {
      etag = await objects.putObject(s3Key, exactBody(request.body, knownTotal), knownTotal, contentType);
      total = knownTotal;
    } else {
      // A chunked body without Content-Range: its length is known only at its end.
      const counted = exactBody(request.body, PART_SIZE, { atMost: true });
      try {
        etag = await objects.putObjectOfUnknownLength(s3Key, counted, contentType);
      } catch (error) {
        if (error instanceof BodyLengthMismatch && error.overflow) throw wholeBodyTooLarge();
        throw error;
      }
      total = counted.bytesSeen;
    }
    const now = clock();
    try {
      await contents.insert({ ...this.newRecord(id, request.ownerId, contentType, s3Key, null, total, now), state: 'ready', etag, completedAt: now });
    } catch (error) {
      // No record, no content: the object would be unreachable.
      await objects.delete(s3Key).catch(() => undefined);
      throw error;
    }
    return { id, completedNow: true, completed: true };
  }

  /** POST of a range: a new multipart content that exists only if its first range is stored. */
  async createWithRange(request: WriteRequest, range: ContentRange, timings: StageTimings): Promise<WriteOutcome> {
    const { objects, contents, clock, logger } = this.ctx;
    const id = randomUUID();
    const contentType = request.contentType ?? DEFAULT_CONTENT_TYPE;
    const s3Key = contentKey(request.ownerId, id);
    const record = await timings.time('record', async () => {
      const uploadId = await objects.createMultipartUpload(s3Key, contentType);
      const created = this.newRecord(id, request.ownerId, contentType, s3Key, uploadId, range.total, clock());
      try {
        await contents.insert(created);
      } catch (error) {
        await objects.abortMultipartUpload(s3Key, uploadId).catch(() => undefined);
        throw error;
      }
      return created;
    });
    try {
      return await this.ranges.write(record, range, request.body, true, timings);
    } catch (error) {
      await this.cleanup
        .discard(record)
        .catch((cleanupError: unknown) => logger.warn({ contentId: id, err: cleanupError }, 'could not discard a failed new content'));
      throw error;
    }
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
      etag: null,
      createdAt: now,
      expiresAt: new Date(now.getTime() + this.ctx.uploadTtlMs),
      completedAt: null,
    };
  }
}
