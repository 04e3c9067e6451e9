import type { PendingCleanup } from '../store/UploadLedger';
import type { UploadCleanup } from './UploadCleanup';
import type { UploadContext } from './UploadContext';
import { isStale } from './WriteAdmission';

/** What the sweeper needs of the uploads: expiry, and the cleanups completions left undone. */
export interface ExpiringUploads {
  expire(id: string): Promise<boolean>;
  pendingCleanups(limit: number): Promise<PendingCleanup[]>;
  finishCleanup(pending: PendingCleanup): Promise<boolean>;
  dropGoneMarks(limit: number): Promise<number>;
}

/** How long the mark of a forgotten content's bookkeeping stays, fencing writers that computed from before it. */
const GONE_MARK_KEEP_MS = 60 * 60_000;

/** Expiry of abandoned uploads and the cleanup of completed ones, for the sweeper. */
export class UploadExpiry implements ExpiringUploads {
  constructor(
    private readonly ctx: UploadContext,
    private readonly cleanup: UploadCleanup,
  ) {}

  /**
   * Removes an upload whose time to live has run out, unless it has been written to or completed
   * since the sweeper read it. The decision is taken under the content's lock and marked in its
   * bookkeeping, so that no write after it is accepted and no completion runs.
   */
  async expire(id: string): Promise<boolean> {
    const { commits, contents, objects, clock, leases, logger } = this.ctx;
    const claimed = await commits.commit(id, async (view) => {
      const current = await contents.get(id);
      if (!current || current.state !== 'uploading' || current.expiresAt.getTime() >= clock().getTime()) return null;
      const { completing } = view.state;
      if (completing && !isStale(completing, leases.completionLeaseMs, clock())) return null;
      view.state.expiring = clock();
      return { record: current, total: current.total ?? view.state.total, wasCompleting: completing !== null };
    });
    if (!claimed) return false;
    const { record, total } = claimed;
    // A completion whose CompleteMultipartUpload went through but whose request died before it
    // recorded so: the object is whole in S3; the content is made ready, not removed.
    const finished = claimed.wasCompleting && total !== null ? await objects.head(record.s3Key) : null;
    if (finished && finished.contentLength === total) {
      await contents.markReady(record._id, total, finished.etag, clock());
      await this.cleanup.afterCompletion(record._id);
      logger.warn({ contentId: record._id }, 'an expired upload was complete in S3: marked ready instead of removed');
      return false;
    }
    await this.cleanup.discard(record);
    this.ctx.metrics.swept.inc();
    return true;
  }

  /** Deletes the marks of bookkeeping forgotten more than an hour ago. */
  async dropGoneMarks(limit: number): Promise<number> {
    return this.ctx.ledger.dropGoneMarks(new Date(this.ctx.clock().getTime() - GONE_MARK_KEEP_MS), limit);
  }

  /** Cleanups noted at completion that have not happened (their request failed or died). */
  async pendingCleanups(limit: number): Promise<PendingCleanup[]> {
    return this.ctx.ledger.pendingCleanups(limit);
  }

  /**
   * Deletes a completed content's staged objects and bookkeeping; false (nothing done) while the
   * content is still uploading (a completion that failed and may be tried again). A content that
   * is gone (swept) leaves nothing to delete but the note.
   */
  async finishCleanup(pending: PendingCleanup): Promise<boolean> {
    const record = await this.ctx.contents.get(pending._id);
    if (record && record.state !== 'ready') return false;
    await this.cleanup.afterCompletion(pending._id);
    return true;
  }
}
