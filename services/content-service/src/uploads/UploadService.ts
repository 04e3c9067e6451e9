import { Readable } from 'node:stream';
import { ServiceError } from '@cp/errors';
import { MAX_CONTENT_SIZE } from '@cp/protocol';
import { BookCommits } from './BookCommits';
import type { UploadRecord } from '../store/UploadBook';
import { BackgroundAssemblies, UploadCompletion, UploadStatus } from './UploadCompletion';
import { ContentCreation } from './ContentCreation';
import { ContentRemoval, type ExpiringUploads, LostUploads, UploadCleanup, UploadExpiry } from './UploadCleanup';
import { DirectParts } from './DirectParts';
import { RangeWriter } from './RangeWriter';
import { ReadyContentRewrites } from './ReadyContentRewrites';
import { StageTimings, UploadMetrics } from './UploadMetrics';
import {
  NO_EVENTS,
  type BeginRequest,
  type UploadContext,
  type UploadServiceDeps,
  type UploadServiceOptions,
  type WriteOutcome,
  type WriteRequest,
} from './UploadContext';
import { contentKey } from './PartGrid';
import { admitWrite } from './WriteAdmission';
import { OwnerQuotas } from '../quotas/OwnerQuotas';

export type {
  BeginRequest,
  Clock,
  UploadServiceDeps,
  UploadServiceOptions,
  WriteOutcome,
  WriteRequest,
} from './UploadContext';
export { contentKey, KEPT_FOLDERS } from './PartGrid';
export { MAX_LIFE_TTLS } from './WriteAdmission';

/**
 * Takes uploads. A range that is exactly a grid part streams straight into UploadPart; any other
 * range is staged in S3 and assembled into its part once the part is covered. Completion is
 * claimed by compare-and-set in the upload's bookkeeping, so exactly one request completes a content.
 *
 * A façade over the units that do the work: admission (WriteAdmission), new contents
 * (ContentCreation), ranges (RangeWriter), claims (WorkClaims), assembly and completion
 * (UploadCompletion), an upload S3 lost (LostUploads), writes to ready contents (ReadyContentRewrites), status (UploadStatus),
 * expiry and cleanup (UploadExpiry, UploadCleanup), removal on request (ContentRemoval).
 */
export class UploadService implements ExpiringUploads {
  readonly metrics: UploadMetrics;
  /** HEAD and the repair a download triggers: what DownloadService uses. */
  readonly status: UploadStatus;
  /** Expiry and pending cleanups: what the sweeper uses. */
  readonly expiry: UploadExpiry;
  /** Assemblies running after their requests answered (drained at shutdown). */
  readonly background: BackgroundAssemblies;
  /** Parts sent straight to S3 with presigned URLs (where enabled). */
  readonly direct: DirectParts;
  private readonly cleanup: UploadCleanup;
  private readonly creation: ContentCreation;
  private readonly ranges: RangeWriter;
  private readonly rewrites: ReadyContentRewrites;
  private readonly removal: ContentRemoval;
  private readonly ctx: UploadContext;

  constructor(deps: UploadServiceDeps, options: UploadServiceOptions) {
    this.metrics = deps.metrics ?? new UploadMetrics();
    const ctx: UploadContext = {
      book: deps.book,
      objects: deps.objects,
      commits: new BookCommits(deps.book),
      logger: deps.logger,
      metrics: this.metrics,
      quotas: deps.quotas ?? new OwnerQuotas(null, deps.book, { bytes: null, uploads: null }, deps.logger),
      events: deps.events ?? NO_EVENTS,
      clock: options.clock ?? (() => new Date()),
      leases: { completionLeaseMs: options.completionLeaseMs, assemblyLeaseMs: options.assemblyLeaseMs },
      uploadTtlMs: options.uploadTtlMs,
    };
    this.ctx = ctx;
    this.cleanup = new UploadCleanup(ctx);
    this.background = new BackgroundAssemblies(options.backgroundAssemblies ?? 4, (contentId, error) =>
      deps.logger.warn(
        { contentId, err: error },
        'an assembly after its request failed; its claim is released or runs out, and a later request does it',
      ),
    );
    const lost = new LostUploads(ctx, this.cleanup);
    const completion = new UploadCompletion(ctx, deps.assembler, this.cleanup, this.background, lost);
    this.rewrites = new ReadyContentRewrites(ctx);
    this.ranges = new RangeWriter(ctx, this.rewrites, completion, lost);
    this.creation = new ContentCreation(ctx, this.ranges, this.cleanup);
    this.status = new UploadStatus(ctx, completion);
    this.expiry = new UploadExpiry(ctx, this.cleanup);
    this.removal = new ContentRemoval(ctx, this.expiry, this.cleanup);
    this.direct = new DirectParts(ctx, this.ranges, deps.presigner ?? null);
  }

  async write(request: WriteRequest): Promise<WriteOutcome> {
    const admitted = admitWrite(request);
    const timings = request.timings ?? new StageTimings();
    if (admitted.kind === 'whole') return this.creation.storeWhole(request, admitted.total);
    if (admitted.kind === 'create') return this.creation.createWithRange(request, admitted.range, timings);
    const record = await timings.time('record', () => this.ctx.book.find(admitted.contentId));
    if (record && record.ownerId === request.ownerId)
      return this.ranges.write(record, admitted.range, request.body, false, timings, request);
    // No upload: a finished content (its object), or none of this owner's.
    const s3Key = contentKey(request.ownerId, admitted.contentId);
    const ready = record ? null : await this.ctx.objects.head(s3Key);
    if (!ready)
      throw ServiceError.of('contentNotFound', `there is no content ${admitted.contentId} of owner ${request.ownerId}`);
    return this.rewrites.rewrite(
      request.body,
      { id: admitted.contentId, s3Key, total: ready.contentLength },
      admitted.range,
      request.sha256,
    );
  }

  /**
   * A new content with no bytes yet, which later writes of ranges fill (a resumable-upload
   * protocol's creation); its id. A content of 0 bytes is stored at once, ready.
   */
  async begin(request: BeginRequest, timings = new StageTimings()): Promise<string> {
    if (request.total !== null && request.total > MAX_CONTENT_SIZE)
      throw ServiceError.of('contentTooLarge', `a content may be at most ${MAX_CONTENT_SIZE} bytes`);
    if (request.total === 0) {
      const empty = { ...request, contentId: null, range: null, declaredLength: 0, body: Readable.from([]) };
      return (await this.creation.storeWhole(empty, 0)).id;
    }
    return (await this.creation.begin(request, timings))._id;
  }

  /**
   * Names the total of an unfinished upload created without one, with no bytes (see
   * RangeWriter.nameTotal); completes the content when every byte is there.
   */
  async nameTotal(ownerId: string, id: string, total: number, timings = new StageTimings()): Promise<WriteOutcome> {
    if (total > MAX_CONTENT_SIZE)
      throw ServiceError.of('contentTooLarge', `a content may be at most ${MAX_CONTENT_SIZE} bytes`);
    const record = await this.status.find(ownerId, id);
    if (!record) throw ServiceError.of('contentNotFound', `there is no unfinished upload ${id} of owner ${ownerId}`);
    return this.ranges.nameTotal(record, total, timings);
  }

  /** DELETE: removes a ready content or aborts an unfinished upload (see ContentRemoval). */
  remove(ownerId: string, id: string): Promise<void> {
    return this.removal.remove(ownerId, id);
  }

  /** For the sweeper: removes an upload whose time to live has run out (see UploadExpiry). */
  expire(id: string): Promise<boolean> {
    return this.expiry.expire(id);
  }

  /** Removes everything of an unfinished content. */
  discard(record: UploadRecord): Promise<void> {
    return this.cleanup.discard(record);
  }

  /** For the sweeper: cleanups noted at completion that have not happened. */
  pendingCleanups(limit: number): Promise<string[]> {
    return this.expiry.pendingCleanups(limit);
  }

  /** For the sweeper: deletes a completed content's staged objects and bookkeeping. */
  finishCleanup(id: string): Promise<boolean> {
    return this.expiry.finishCleanup(id);
  }
}
