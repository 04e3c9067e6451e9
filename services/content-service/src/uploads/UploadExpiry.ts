import type { UploadRecord } from '../store/UploadBook';
import type { UploadCleanup } from './UploadCleanup';
import type { UploadContext } from './UploadContext';
import { isStale } from './WriteAdmission';

/** What the sweeper needs of the uploads: expiry, and the cleanups completions left undone. */
export interface ExpiringUploads {
  expire(id: string): Promise<boolean>;
  pendingCleanups(limit: number): Promise<string[]>;
  finishCleanup(id: string): Promise<boolean>;
}

/** What marking an upload for removal found: marked (and whether a completion had been claimed), or why not. */
export type Mark =
  { kind: 'marked'; total: number | null; wasCompleting: boolean } | { kind: 'completing' } | { kind: 'gone' };

/** Expiry of abandoned uploads and the cleanup of completed ones, for the sweeper. */
export class UploadExpiry implements ExpiringUploads {
  constructor(
    private readonly ctx: UploadContext,
    private readonly cleanup: UploadCleanup,
  ) {}

  /**
   * Removes an upload whose time to live has run out, unless it has been written to or completed
   * since the sweeper read it. The decision is marked in its bookkeeping (a versioned commit), so
   * that no write after it is accepted and no completion runs.
   */
  async expire(id: string): Promise<boolean> {
    const { book, objects, clock, logger } = this.ctx;
    const record = await book.find(id);
    if (!record) {
      await book.remove(id); // an expiry entry without an upload
      return false;
    }
    if (record.expiresAt.getTime() >= clock().getTime()) {
      await book.extend(id, record.expiresAt); // the index lagged behind the record
      return false;
    }
    const claimed = await this.mark(record);
    if (claimed.kind !== 'marked') return false;
    // A completion whose CompleteMultipartUpload went through but whose request died before it
    // cleaned up: the object is whole in S3, and it is the content; only the staging goes.
    const finished = claimed.wasCompleting && claimed.total !== null ? await objects.head(record.s3Key) : null;
    if (finished && finished.contentLength === claimed.total) {
      await this.cleanup.afterCompletion(id);
      logger.warn({ contentId: id }, 'an expired upload was complete in S3: its staging removed, the content kept');
      return false;
    }
    const expired = { id, size: claimed.total, 'content-type': record.contentType };
    const intent = await this.ctx.events.intend('content.expired', record.ownerId, expired);
    await this.cleanup.discard(record);
    await this.ctx.events.publish(intent);
    this.ctx.metrics.swept.inc();
    return true;
  }

  /**
   * The fenced decision to remove an unfinished upload (expiry, or its owner's DELETE): a versioned
   * commit marks it `expiring`, after which no write is accepted and no completion is claimed.
   * Refused while a live request holds its completion claim; `gone` when it has no bookkeeping
   * any more (completed or removed since its record was read).
   */
  async mark(record: UploadRecord): Promise<Mark> {
    const { commits, clock, leases } = this.ctx;
    return commits.commit(record._id, async (view): Promise<Mark> => {
      const { completing } = view.state;
      if (view.state.version === 0) return { kind: 'gone' };
      if (completing && !isStale(completing, leases.completionLeaseMs, clock())) return { kind: 'completing' };
      view.state.expiring = clock();
      return { kind: 'marked', total: record.total ?? view.state.total, wasCompleting: completing !== null };
    });
  }

  /** Cleanups noted at completion that have not happened (their request failed or died). */
  async pendingCleanups(limit: number): Promise<string[]> {
    return this.ctx.book.pendingCleanups(limit);
  }

  /**
   * Deletes a completed content's staged objects and bookkeeping; false (nothing done) while its
   * completion runs or the content is still uploading (a completion that failed and may be tried
   * again). A content that is gone (swept) leaves nothing to delete but the note.
   */
  async finishCleanup(id: string): Promise<boolean> {
    const { book, objects, clock, leases } = this.ctx;
    const record = await book.find(id);
    if (record) {
      // A completion still at work (its claim renewed) cleans up itself.
      const { completing } = await book.state(id);
      if (completing && !isStale(completing, leases.completionLeaseMs, clock())) return false;
      if (!(await objects.head(record.s3Key))) return false;
    }
    await this.cleanup.afterCompletion(id);
    return true;
  }
}
