import type { ContentRecord } from '../store/ContentRepository';
import { stagingPrefix } from './ObjectKeys';
import { PartGrid } from './PartGrid';
import type { UploadContext } from './UploadContext';

/** Deletes what an upload leaves behind: its staged pieces and bookkeeping, or the whole unfinished content. */
export class UploadCleanup {
  constructor(private readonly ctx: UploadContext) {}

  /**
   * Removes everything of an unfinished content: its S3 upload, record, staged pieces, and last
   * its bookkeeping (which, when the content expired, keeps refusing late writes until then).
   */
  async discard(record: ContentRecord): Promise<void> {
    const { objects, contents, ledger } = this.ctx;
    if (record.uploadId) await objects.abortMultipartUpload(record.s3Key, record.uploadId);
    await contents.remove(record._id);
    await objects.deletePrefix(stagingPrefix(record._id));
    const state = await ledger.state(record._id);
    // Parts up to the last byte received, or all of them when the total is known (an aligned write
    // may have claimed a later part and failed).
    const total = record.total ?? state.total;
    await ledger.forget(record._id, Math.max(PartGrid.partNumberAt(Math.max(0, state.lastByte)), total ? PartGrid.partCount(total) : 0));
  }

  /** After a completion: the staged objects and the bookkeeping go, then the note that they must. */
  async afterCompletion(id: string, total: number): Promise<void> {
    await this.ctx.objects.deletePrefix(stagingPrefix(id));
    await this.ctx.ledger.forget(id, PartGrid.partCount(total));
    await this.ctx.ledger.cleanupDone(id);
  }
}
