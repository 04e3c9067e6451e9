import type { ContentRecord } from '../store/ContentRepository';
import { stagingPrefix } from './ObjectKeys';
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
    await ledger.forget(record._id);
  }

  /** After a completion: the staged objects and the bookkeeping go, then the note that they must. */
  async afterCompletion(id: string): Promise<void> {
    await this.ctx.objects.deletePrefix(stagingPrefix(id));
    await this.ctx.ledger.forget(id);
    await this.ctx.ledger.cleanupDone(id);
  }
}
