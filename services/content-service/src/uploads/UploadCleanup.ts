import type { UploadRecord } from '../store/UploadBook';
import { stagingPrefix } from './ObjectKeys';
import type { UploadContext } from './UploadContext';

/** Deletes what an upload leaves behind: its staged pieces and bookkeeping, or the whole unfinished content. */
export class UploadCleanup {
  constructor(private readonly ctx: UploadContext) {}

  /**
   * Removes everything of an unfinished content: its S3 upload, staged pieces, and last its
   * record and bookkeeping (which, when the content expired, keep refusing late writes until then).
   */
  async discard(record: UploadRecord): Promise<void> {
    const { objects, book, quotas } = this.ctx;
    // What the upload holds of its owner's quota: its total, or what the write that named it held.
    const held = record.total ?? (quotas.enabled ? ((await book.state(record._id)).held ?? 0) : 0);
    await objects.abortMultipartUpload(record.s3Key, record.uploadId);
    await objects.deletePrefix(stagingPrefix(record._id));
    await book.remove(record._id);
    await quotas.discarded(record.ownerId, record._id, held);
  }

  /** After a completion: the staged objects and the bookkeeping go, then the note that they must. */
  async afterCompletion(id: string): Promise<void> {
    await this.ctx.book.remove(id);
    await this.ctx.objects.deletePrefix(stagingPrefix(id));
    await this.ctx.book.cleanupDone(id);
  }
}
