import { randomUUID } from 'node:crypto';
import { ServiceError } from '@cp/errors';
import { crc64nvme, formatDigest, PART_SIZE, type ContentRange } from '@cp/protocol';
import { OwnedLimitReached, type UploadRecord } from '../store/UploadBook';
import { BodyLengthMismatch, exactBody } from './ExactLengthStream';
import { contentKey } from './PartGrid';
import type { RangeWriter } from './RangeWriter';
import type { StageTimings } from './UploadMetrics';
import type { UploadCleanup } from './UploadCleanup';
import type { BeginRequest, UploadContext, WriteOutcome, WriteRequest } from './UploadContext';
import { wholeBodyTooLarge } from './WriteAdmission';
import { OwnerQuotas, type Hold } from '../quotas/OwnerQuotas';

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
    const { clock, events } = this.ctx;
    const id = randomUUID();
    const contentType = request.contentType ?? DEFAULT_CONTENT_TYPE;
    const s3Key = contentKey(request.ownerId, id);
    const metadata = { ...objectMetadata(request, clock(), request.sha256 ?? null), ...request.metadata };
    // A chunked body's length is known only at its end: as much of the most it may be as fits is held.
    const hold = await this.ctx.quotas.admit(request.ownerId, knownTotal ?? PART_SIZE, false, knownTotal === null);
    let size: number;
    let intent: unknown;
    try {
      intent = await events.intend('content.completed', request.ownerId, {
        id,
        size: knownTotal,
        'content-type': contentType,
        'repr-digest': request.sha256 ? formatDigest({ 'sha-256': request.sha256 }) : null,
      });
      size = await this.putWhole(request, s3Key, contentType, metadata, knownTotal, hold);
      await this.checkShown(s3Key, size);
    } catch (error) {
      await hold.release();
      throw error;
    }
    await hold.stored(size);
    await events.publish(intent);
    return { id, completedNow: true, completed: true };
  }

  /**
   * S3's "stored" is not proof: the content is ready once S3 shows its object with its length. An
   * object of another length (never seen here) is deleted, as the client is told to send it again.
   */
  private async checkShown(s3Key: string, size: number): Promise<void> {
    const shown = await this.ctx.objects.head(s3Key);
    if (shown?.contentLength === size) return;
    if (shown) await this.ctx.objects.delete(s3Key).catch(() => undefined);
    throw ServiceError.of(
      'storageUnavailable',
      `S3 answered that it stored the content but shows ${shown ? `${shown.contentLength} bytes` : 'no object'}; send it again`,
    );
  }

  /** Stores a one-shot content as its object (its only record: once S3 has it, the content is ready); returns its size. */
  private async putWhole(
    request: WriteRequest,
    s3Key: string,
    contentType: string,
    metadata: Record<string, string>,
    knownTotal: number | null,
    hold: Hold,
  ): Promise<number> {
    const { objects } = this.ctx;
    if (knownTotal !== null) {
      // The SHA-256 is checked here (S3 is sent the CRC-64/NVME, the digest it keeps for the content).
      const body = exactBody(request.body, knownTotal, { sha256: request.sha256 });
      await objects.putObject(s3Key, body, knownTotal, contentType, { metadata, digests: request, whole: true });
      return knownTotal;
    }
    // A chunked body without Content-Range: at most a part, and at most what is left of the quota.
    const most = Math.min(PART_SIZE, hold.bytes ?? PART_SIZE);
    // Nothing else sees this body's bytes whole before they are stored: its CRC-64/NVME is checked here too.
    const crc = request.crc64nvme ? { hasher: await crc64nvme(), expected: request.crc64nvme } : null;
    const counted = exactBody(request.body, most, { atMost: true, sha256: request.sha256, crc64nvme: crc });
    try {
      await objects.putObjectOfUnknownLength(s3Key, counted, contentType, metadata);
    } catch (error) {
      if (error instanceof BodyLengthMismatch && error.overflow)
        throw most < PART_SIZE ? OwnerQuotas.bodyOverQuota(hold) : wholeBodyTooLarge();
      throw error;
    }
    return counted.bytesSeen;
  }

  /** POST of a range: a new multipart content that exists only if its first range is stored. */
  async createWithRange(request: WriteRequest, range: ContentRange, timings: StageTimings): Promise<WriteOutcome> {
    const record = await this.open(request, range.total, timings);
    try {
      return await this.ranges.write(record, range, request.body, true, timings, request);
    } catch (error) {
      await this.cleanup
        .discard(record)
        .catch((cleanupError: unknown) =>
          this.ctx.logger.warn({ contentId: record._id, err: cleanupError }, 'could not discard a failed new content'),
        );
      throw error;
    }
  }

  /**
   * A new multipart content without any bytes yet (a resumable-upload protocol's creation): it
   * lives until its time to live runs out after its last write, as any unfinished upload does.
   */
  begin(request: BeginRequest, timings: StageTimings): Promise<UploadRecord> {
    return this.open(request, request.total, timings);
  }

  /** The record and S3 multipart upload of a new content, held against the owner's quotas. */
  private async open(
    request: Omit<BeginRequest, 'total'>,
    total: number | null,
    timings: StageTimings,
  ): Promise<UploadRecord> {
    const { objects, book, clock, uploadTtlMs } = this.ctx;
    const id = randomUUID();
    const contentType = request.contentType ?? DEFAULT_CONTENT_TYPE;
    const s3Key = contentKey(request.ownerId, id);
    const uploader = request.uploader ?? null;
    // Held until the content completes or goes (UploadCompletion, UploadCleanup.discard).
    const hold = await timings.time('record', () => this.ctx.quotas.admit(request.ownerId, total ?? 0, true));
    return timings
      .time('record', async () => {
        const now = clock();
        const metadata = { ...objectMetadata(request, now), ...request.metadata };
        const uploadId = await objects.createMultipartUpload(s3Key, contentType, metadata);
        const created: UploadRecord = {
          _id: id,
          ownerId: request.ownerId,
          total,
          contentType,
          s3Key,
          uploadId,
          uploader,
          metadata,
          createdAt: now,
          expiresAt: new Date(now.getTime() + uploadTtlMs),
        };
        try {
          await book.create(created, hold.maxOwned);
        } catch (error) {
          await objects.abortMultipartUpload(s3Key, uploadId).catch(() => undefined);
          throw error instanceof OwnedLimitReached ? OwnerQuotas.uploadsOverQuota(error) : error;
        }
        return created;
      })
      .catch(async (error: unknown) => {
        await hold.release();
        throw error;
      });
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
