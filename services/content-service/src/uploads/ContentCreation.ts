import { randomUUID } from 'node:crypto';
import { formatDigest, PART_SIZE, type ContentRange } from '@cp/protocol';
import type { UploadRecord } from '../store/UploadBook';
import { exactBody } from './exactBody';
import { BodyLengthMismatch } from './ExactLengthStream';
import { contentKey } from './ObjectKeys';
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
    const { objects, clock, events } = this.ctx;
    const id = randomUUID();
    const contentType = request.contentType ?? DEFAULT_CONTENT_TYPE;
    const s3Key = contentKey(request.ownerId, id);
    const metadata = objectMetadata(request, clock(), request.sha256 ?? null);
    const intent = await events.intend('content.completed', request.ownerId, {
      id,
      size: knownTotal,
      'content-type': contentType,
      'repr-digest': request.sha256 ? formatDigest({ 'sha-256': request.sha256 }) : null,
    });
    // The object is the content's only record: once S3 has it, the content is ready.
    if (knownTotal !== null) {
      // The SHA-256 is checked here (S3 is sent the CRC-64/NVME, the digest it keeps for the content).
      const body = exactBody(request.body, knownTotal, { sha256: request.sha256 });
      await objects.putObject(s3Key, body, knownTotal, contentType, { metadata, digests: request, whole: true });
    } else {
      // A chunked body without Content-Range: its length is known only at its end.
      const counted = exactBody(request.body, PART_SIZE, { atMost: true, sha256: request.sha256 });
      try {
        await objects.putObjectOfUnknownLength(s3Key, counted, contentType, metadata);
      } catch (error) {
        if (error instanceof BodyLengthMismatch && error.overflow) throw wholeBodyTooLarge();
        throw error;
      }
    }
    await events.publish(intent);
    return { id, completedNow: true, completed: true };
  }

  /** POST of a range: a new multipart content that exists only if its first range is stored. */
  async createWithRange(request: WriteRequest, range: ContentRange, timings: StageTimings): Promise<WriteOutcome> {
    const { objects, book, clock, logger, uploadTtlMs } = this.ctx;
    const id = randomUUID();
    const contentType = request.contentType ?? DEFAULT_CONTENT_TYPE;
    const s3Key = contentKey(request.ownerId, id);
    const uploader = request.uploader ?? null;
    const record = await timings.time('record', async () => {
      const now = clock();
      const uploadId = await objects.createMultipartUpload(s3Key, contentType, objectMetadata(request, now));
      const created: UploadRecord = {
        _id: id,
        ownerId: request.ownerId,
        total: range.total,
        contentType,
        s3Key,
        uploadId,
        uploader,
        createdAt: now,
        expiresAt: new Date(now.getTime() + uploadTtlMs),
      };
      try {
        await book.create(created);
      } catch (error) {
        await objects.abortMultipartUpload(s3Key, uploadId).catch(() => undefined);
        throw error;
      }
      return created;
    });
    try {
      return await this.ranges.write(record, range, request.body, true, timings, request);
    } catch (error) {
      await this.cleanup
        .discard(record)
        .catch((cleanupError: unknown) =>
          logger.warn({ contentId: id, err: cleanupError }, 'could not discard a failed new content'),
        );
      throw error;
    }
  }
}

/**
 * What a finished content's object carries besides its bytes (S3 user metadata: ASCII only): when
 * it was begun, who sent it (and the certificate its session signed in with), and its SHA-256
 * (base64) when the request named one (and it was checked).
 */
function objectMetadata(
  sender: Pick<WriteRequest, 'uploader' | 'uploaderCertificate'>,
  createdAt: Date,
  sha256: Buffer | null = null,
): Record<string, string> {
  const { uploader, uploaderCertificate } = sender;
  return {
    'created-at': createdAt.toISOString(),
    ...(uploader ? { uploader: encodeURIComponent(uploader) } : {}),
    ...(uploaderCertificate ? { 'uploader-certificate': encodeURIComponent(uploaderCertificate) } : {}),
    ...(sha256 ? { sha256: sha256.toString('base64') } : {}),
  };
}
