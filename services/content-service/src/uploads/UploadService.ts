import { randomBytes, randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import { ServiceError } from '@cp/errors';
import type { Logger } from '@cp/logging';
import type { ContentRange } from '@cp/ranges';
import type { Claims } from '../store/Claims';
import type { ContentRecord, ContentRepository } from '../store/ContentRepository';
import { isNotFound, type ObjectStore } from '../store/ObjectStore';
import { UploadLedger, type ReceivedRange } from '../store/UploadLedger';
import { classifyRange, type ByteRange } from './ByteRanges';
import { exactBody, pipeInto } from './exactBody';
import { BodyLengthMismatch } from './ExactLengthStream';
import { HashingStream } from './HashingStream';
import type { PartAssembler } from './PartAssembler';
import { MAX_CONTENT_SIZE, PART_SIZE, PartGrid } from './PartGrid';
import { streamsEqual } from './streamsEqual';

export type Clock = () => Date;

export interface UploadServiceOptions {
  /** How long an unfinished upload lives before the sweeper removes it. */
  uploadTtlMs: number;
  /** How long a completion may stay claimed before another request takes it over. */
  completionLeaseMs: number;
  clock?: Clock;
}

export interface UploadServiceDeps {
  contents: ContentRepository;
  ledger: UploadLedger;
  objects: ObjectStore;
  assembler: PartAssembler;
  completions: Claims;
  logger: Logger;
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
  /** True when this request completed the content (a PUT answers 201). */
  completedNow: boolean;
  /** Whether the content is ready after this request. */
  completed: boolean;
}

const DEFAULT_CONTENT_TYPE = 'application/octet-stream';

/**
 * Takes uploads. A range that is exactly a grid part streams straight into UploadPart; any other
 * range is staged in S3 and assembled into its part once the part is covered. Completion is
 * decided by an insert-claim, so exactly one request completes a content.
 */
export class UploadService {
  private readonly clock: Clock;
  private readonly contents: ContentRepository;
  private readonly ledger: UploadLedger;
  private readonly objects: ObjectStore;
  private readonly assembler: PartAssembler;
  private readonly completions: Claims;
  private readonly logger: Logger;

  constructor(
    deps: UploadServiceDeps,
    private readonly options: UploadServiceOptions,
  ) {
    ({ contents: this.contents, ledger: this.ledger, objects: this.objects, assembler: this.assembler, completions: this.completions, logger: this.logger } = deps);
    this.clock = options.clock ?? (() => new Date());
  }

  async write(request: WriteRequest): Promise<WriteOutcome> {
    if (request.range === null) {
      if (request.contentId !== null) throw ServiceError.badRequest('missingContentRange', 'Content-Range is required on PUT');
      if (request.declaredLength !== null && request.declaredLength > PART_SIZE) {
        throw new ServiceError(413, 'partTooLarge', `a single-request upload may carry at most ${PART_SIZE} bytes; send larger contents in parts with Content-Range`);
      }
      return this.storeWhole(request, request.declaredLength);
    }
    const { start, end, total } = request.range;
    const length = end - start + 1;
    if (length > PART_SIZE) throw new ServiceError(413, 'partTooLarge', `a part may carry at most ${PART_SIZE} bytes; this one carries ${length}`);
    if (total !== null && total > MAX_CONTENT_SIZE) throw new ServiceError(413, 'contentTooLarge', `a content may be at most ${MAX_CONTENT_SIZE} bytes`);
    if (end >= MAX_CONTENT_SIZE) throw new ServiceError(413, 'contentTooLarge', `byte ${end} lies past the content limit of ${MAX_CONTENT_SIZE} bytes`);
    if (request.declaredLength !== null && request.declaredLength !== length) {
      throw ServiceError.badRequest('bodyLengthMismatch', `Content-Length ${request.declaredLength} differs from the ${length} bytes Content-Range names`);
    }
    if (request.contentId === null) {
      if (start === 0 && total !== null && end === total - 1) return this.storeWhole(request, total);
      return this.createWithRange(request, request.range);
    }
    const record = await this.requireRecord(request.ownerId, request.contentId);
    if (record.state === 'ready') return this.rewriteReady(request, record, request.range);
    return this.receive(record, request.range, request.body);
  }

  /** The whole content in one request, stored with one PutObject. */
  private async storeWhole(request: WriteRequest, knownTotal: number | null): Promise<WriteOutcome> {
    const id = randomUUID();
    const contentType = request.contentType ?? DEFAULT_CONTENT_TYPE;
    const s3Key = contentKey(request.ownerId, id);
    let etag: string;
    let total: number;
    if (knownTotal !== null) {
      etag = await this.objects.putObject(s3Key, exactBody(request.body, knownTotal), knownTotal, contentType);
      total = knownTotal;
    } else {
      // A chunked body without Content-Range: its length is known only at its end.
      const counted = exactBody(request.body, PART_SIZE, true);
      try {
        etag = await this.objects.putObjectOfUnknownLength(s3Key, counted, contentType);
      } catch (error) {
        if (error instanceof BodyLengthMismatch && error.overflow) {
          throw new ServiceError(413, 'partTooLarge', `a single-request upload may carry at most ${PART_SIZE} bytes; send larger contents in parts with Content-Range`);
        }
        throw error;
      }
      total = counted.bytesSeen;
    }
    const now = this.clock();
    await this.contents.insert({ ...this.newRecord(id, request.ownerId, contentType, s3Key, null, total, now), state: 'ready', etag, completedAt: now });
    return { id, completedNow: true, completed: true };
  }

  /** POST of a range: a new multipart content that exists only if its first range is stored. */
  private async createWithRange(request: WriteRequest, range: ContentRange): Promise<WriteOutcome> {
    const id = randomUUID();
    const contentType = request.contentType ?? DEFAULT_CONTENT_TYPE;
    const s3Key = contentKey(request.ownerId, id);
    const uploadId = await this.objects.createMultipartUpload(s3Key, contentType);
    const record = this.newRecord(id, request.ownerId, contentType, s3Key, uploadId, range.total, this.clock());
    await this.contents.insert(record);
    try {
      return await this.receive(record, range, request.body);
    } catch (error) {
      await this.discard(record).catch((cleanupError: unknown) => this.logger.warn({ contentId: id, err: cleanupError }, 'could not discard a failed new content'));
      throw error;
    }
  }

  /** Stores one range of an unfinished content, then assembles and completes what it can. */
  private async receive(record: ContentRecord, range: ContentRange, body: Readable): Promise<WriteOutcome> {
    const id = record._id;
    const total = await this.settleTotal(record, range);
    if (total !== null && range.end >= total) {
      throw ServiceError.badRequest('rangePastTotal', `Content-Range end ${range.end} is not below the content's total ${total}`);
    }
    const wanted: ByteRange = { a: range.start, b: range.end };
    const before = await this.ledger.overlapping(id, wanted);
    const verdict = classifyRange(wanted, before);
    if (verdict === 'overlap') throw overlapConflict(wanted, before);
    if (verdict === 'retry' && before[0]!.kind === 'staged' && (await this.touchedPartsStored(id, wanted))) {
      return this.compareAssembledRetry(record, before[0]!, body, range);
    }
    if (await this.completions.isHeld(id)) {
      throw ServiceError.unavailable('contentCompleting', 'the content is being completed right now; retry in a moment', undefined, 1);
    }

    const length = wanted.b - wanted.a + 1;
    const k = PartGrid.alignedPartNumber(wanted.a, wanted.b, total);
    const now = this.clock();
    const rangeId = UploadLedger.rangeId(id, wanted);
    if (k !== null) {
      const etag = await this.objects.uploadPart(record.s3Key, record.uploadId!, k, exactBody(body, length), length);
      const previous = await this.ledger.putRange({ _id: rangeId, contentId: id, ...wanted, kind: 'part', key: null, sha256: null, at: now });
      await this.confirmNoOverlap(id, wanted, previous === null);
      await this.ledger.putPart({ _id: UploadLedger.partId(id, k), contentId: id, k, etag, size: length, at: now });
    } else {
      const key = `${stagingPrefix(id)}${wanted.a}-${wanted.b}.${randomBytes(6).toString('hex')}`;
      const hashing = new HashingStream();
      await this.objects.putObject(key, pipeInto(exactBody(body, length), hashing), length, 'application/octet-stream');
      const previous = await this.ledger.putRange({ _id: rangeId, contentId: id, ...wanted, kind: 'staged', key, sha256: hashing.digest, at: now });
      try {
        await this.confirmNoOverlap(id, wanted, previous === null);
      } catch (error) {
        await this.objects.delete(key).catch(() => undefined);
        throw error;
      }
      if (previous?.key) await this.objects.delete(previous.key).catch(() => undefined);
      for (let part = PartGrid.partNumberAt(wanted.a); part <= PartGrid.partNumberAt(wanted.b); part++) {
        await this.assembler.assemble(record, part, total, now);
      }
    }
    // Naming the total may have made the final part complete, whoever sent its bytes.
    if (total !== null && range.total !== null) await this.assembler.assemble(record, PartGrid.partCount(total), total, now);
    const completedNow = await this.tryComplete(record, total);
    return { id, completedNow, completed: completedNow };
  }

  /**
   * Reconciles the total this request names with the one in force: the first to name it sets it;
   * a different one later, or one below bytes already received, is a conflict.
   */
  private async settleTotal(record: ContentRecord, range: ContentRange): Promise<number | null> {
    const known = await this.contents.totalOf(record);
    if (range.total === null) return known;
    if (known !== null) {
      if (known !== range.total) throw totalConflict(known, range.total);
      return known;
    }
    const lastByte = await this.ledger.lastReceivedByte(record._id);
    if (lastByte >= range.total) {
      throw ServiceError.conflict('totalConflict', `the total ${range.total} is smaller than the ${lastByte + 1} bytes already received`);
    }
    const inForce = await this.contents.declareTotal(record._id, range.total, this.clock());
    if (inForce !== range.total) throw totalConflict(inForce, range.total);
    return inForce;
  }

  /** Two partly overlapping ranges racing each other: both lose, nothing of theirs is kept. */
  private async confirmNoOverlap(id: string, wanted: ByteRange, insertedNew: boolean): Promise<void> {
    const after = await this.ledger.overlapping(id, wanted);
    if (classifyRange(wanted, after) !== 'overlap') return;
    if (insertedNew) await this.ledger.removeRange(UploadLedger.rangeId(id, wanted));
    throw overlapConflict(wanted, after);
  }

  private async touchedPartsStored(id: string, r: ByteRange): Promise<boolean> {
    for (let k = PartGrid.partNumberAt(r.a); k <= PartGrid.partNumberAt(r.b); k++) {
      if (!(await this.ledger.hasPart(id, k))) return false;
    }
    return true;
  }

  /** A retry of a piece already assembled into its part: fine when the bytes are the same ones. */
  private async compareAssembledRetry(record: ContentRecord, stored: ReceivedRange, body: Readable, range: ContentRange): Promise<WriteOutcome> {
    const hashing = new HashingStream();
    const counted = pipeInto(exactBody(body, stored.b - stored.a + 1), hashing);
    for await (const chunk of counted) void chunk;
    if (hashing.digest !== stored.sha256) {
      throw ServiceError.conflict('rangeAlreadyStored', `bytes ${stored.a}-${stored.b} were already received with other content and are part of an assembled part`);
    }
    const total = await this.contents.totalOf(record);
    const completedNow = range.total !== null ? await this.tryComplete(record, total) : false;
    return { id: record._id, completedNow, completed: completedNow };
  }

  /** A write to a finished content is a harmless retry when its bytes are the stored ones. */
  private async rewriteReady(request: WriteRequest, record: ContentRecord, range: ContentRange): Promise<WriteOutcome> {
    const total = record.total!;
    if (range.total !== null && range.total !== total) throw totalConflict(total, range.total);
    if (range.end >= total) throw ServiceError.badRequest('rangePastTotal', `Content-Range end ${range.end} is not below the content's total ${total}`);
    const stored = await this.objects.getRange(record.s3Key, range.start, range.end);
    if (!(await streamsEqual(exactBody(request.body, range.end - range.start + 1), stored.body))) {
      throw ServiceError.conflict('contentAlreadyComplete', 'the content is complete and these bytes differ from the stored ones');
    }
    return { id: record._id, completedNow: false, completed: true };
  }

  /**
   * Completes the content when every part is stored. Of all requests that see that, the one whose
   * claim insert succeeds calls CompleteMultipartUpload and returns true.
   */
  private async tryComplete(record: ContentRecord, total: number | null): Promise<boolean> {
    if (total === null) return false;
    const expected = PartGrid.partCount(total);
    if ((await this.ledger.partCount(record._id)) < expected) return false;
    if (!(await this.completions.acquire(record._id, this.clock(), this.options.completionLeaseMs))) return false;
    try {
      const fresh = await this.contents.find(record.ownerId, record._id);
      if (!fresh || fresh.state === 'ready') return false;
      const parts = (await this.ledger.partsOf(record._id)).filter((p) => p.k <= expected);
      const lastSize = total - (expected - 1) * PART_SIZE;
      const consistent = parts.length === expected && parts.every((p, i) => p.k === i + 1 && p.size === (p.k === expected ? lastSize : PART_SIZE));
      if (!consistent) {
        this.logger.warn({ contentId: record._id, parts: parts.map((p) => [p.k, p.size]) }, 'parts do not fit the total; not completing');
        return false;
      }
      let etag: string;
      try {
        etag = await this.objects.completeMultipartUpload(record.s3Key, record.uploadId!, parts.map((p) => ({ partNumber: p.k, etag: p.etag })));
      } catch (error) {
        // An earlier holder may have completed the upload before it could record so.
        const existing = isNotFound(error) ? await this.objects.head(record.s3Key) : null;
        if (existing === null || existing.contentLength !== total) throw error;
        etag = existing.etag;
      }
      await this.contents.markReady(record._id, total, etag, this.clock());
    } finally {
      await this.completions.release(record._id);
    }
    await this.cleanUp(record._id).catch((error: unknown) => this.logger.warn({ contentId: record._id, err: error }, 'cleanup after completion failed; the sweeper will retry'));
    return true;
  }

  /** For readers: finishes a content whose parts are all stored but whose completion did not happen. */
  async finishIfComplete(record: ContentRecord): Promise<ContentRecord> {
    if (record.state === 'ready') return record;
    await this.tryComplete(record, await this.contents.totalOf(record));
    return (await this.contents.find(record.ownerId, record._id)) ?? record;
  }

  /** Removes everything of an unfinished content: its S3 upload, staged pieces, and records. */
  async discard(record: ContentRecord): Promise<void> {
    if (record.uploadId) await this.objects.abortMultipartUpload(record.s3Key, record.uploadId);
    await this.objects.deletePrefix(stagingPrefix(record._id));
    await this.ledger.forget(record._id);
    await this.contents.remove(record._id);
  }

  private async cleanUp(id: string): Promise<void> {
    await this.objects.deletePrefix(stagingPrefix(id));
    await this.ledger.forget(id);
    await this.contents.forgetTotal(id);
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
      etag: null,
      createdAt: now,
      expiresAt: new Date(now.getTime() + this.options.uploadTtlMs),
      completedAt: null,
    };
  }
}

export function contentKey(ownerId: string, id: string): string {
  return `contents/${ownerId}/${id}`;
}

export function stagingPrefix(id: string): string {
  return `staging/${id}/`;
}

function totalConflict(stored: number, given: number): ServiceError {
  return ServiceError.conflict('totalConflict', `the content's total is ${stored}, not ${given}`);
}

function overlapConflict(wanted: ByteRange, received: readonly ByteRange[]): ServiceError {
  const clash = received.find((r) => !(r.b < wanted.a || r.a > wanted.b) && !(r.a === wanted.a && r.b === wanted.b));
  return ServiceError.conflict(
    'rangeOverlap',
    `bytes ${wanted.a}-${wanted.b} partly overlap bytes ${clash ? `${clash.a}-${clash.b}` : ''} already received; resend exactly the same range or only missing bytes`,
  );
}
