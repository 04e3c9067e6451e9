import type { Readable } from 'node:stream';
import { ServiceError } from '@cp/errors';
import type { ContentRange } from '@cp/ranges';
import type { ContentRecord } from '../store/ContentRepository';
import type { Piece } from '../store/UploadLedger';
import { exactBody } from './exactBody';
import { streamsEqual } from './streamsEqual';
import type { UploadContext, WriteOutcome } from './UploadContext';
import { completing, expired, totalConflict } from './WriteAdmission';

const differs = () => ServiceError.of('contentAlreadyComplete');

/**
 * Writes to a content that is (or became, while the bytes were sent) complete: a harmless retry
 * when the bytes are the stored ones, 409 otherwise. Nothing is ever changed.
 */
export class ReadyContentRewrites {
  constructor(private readonly ctx: UploadContext) {}

  /** A write to a finished content is a harmless retry when its bytes are the stored ones. */
  async rewrite(body: Readable, record: ContentRecord, range: ContentRange): Promise<WriteOutcome> {
    const total = record.total!;
    if (range.total !== null && range.total !== total) throw totalConflict(total, range.total);
    if (range.end >= total) throw ServiceError.of('rangePastTotal', `Content-Range end ${range.end} is not below the content's total ${total}`);
    const stored = await this.ctx.objects.getRange(record.s3Key, range.start, range.end);
    if (!(await streamsEqual(exactBody(body, range.end - range.start + 1), stored.body))) throw differs();
    return { id: record._id, completedNow: false, completed: true };
  }

  /**
   * A range that arrived while its content completed (or expired): once complete, it is a retry
   * when its bytes are the stored ones (answered like a write to a ready content), else 409; a
   * content gone is 404. Its staged copy is deleted either way.
   */
  async afterCompletion(record: ContentRecord, range: ContentRange, piece: Piece): Promise<WriteOutcome> {
    const { contents, objects } = this.ctx;
    try {
      const now = await contents.get(record._id);
      if (!now) throw expired(record._id);
      if (now.state !== 'ready') throw completing();
      // An aligned part went into the S3 upload that the completion closed: nothing to compare it with.
      if (!piece.key)
        throw ServiceError.of('contentAlreadyComplete', 'the content was completed while these bytes were sent; send them again to have them compared');
      const stored = await objects.getRange(now.s3Key, range.start, range.end);
      const sent = await objects.getRange(piece.key, 0, range.end - range.start);
      if (!(await streamsEqual(sent.body, stored.body))) throw differs();
      return { id: record._id, completedNow: false, completed: true };
    } finally {
      if (piece.key) await objects.delete(piece.key).catch(() => undefined);
    }
  }
}
