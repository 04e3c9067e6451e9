import { type Readable } from 'node:stream';
import { ServiceError } from '@cp/errors';
import { type ContentRange } from '@cp/protocol';
import { isNotFound } from '../store/ObjectStore';
import { type Piece, type UploadRecord } from '../store/UploadBook';
import { exactBody } from './ExactLengthStream';
import { type UploadContext, type WriteOutcome } from './UploadContext';
import { completing, expired, totalConflict } from './WriteAdmission';

/**
 * Compares two byte streams of the same expected length chunk by chunk, holding at most one
 * chunk of each in memory. Both streams are read to the end (or destroyed on a difference).
 */
export async function streamsEqual(a: Readable, b: Readable): Promise<boolean> {
  const left = a[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  const right = b[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  let l: Buffer = Buffer.alloc(0);
  let r: Buffer = Buffer.alloc(0);
  let leftDone = false;
  let rightDone = false;
  try {
    for (;;) {
      if (l.length === 0 && !leftDone) {
        const next = await left.next();
        if (next.done) leftDone = true;
        else l = next.value;
      }
      if (r.length === 0 && !rightDone) {
        const next = await right.next();
        if (next.done) rightDone = true;
        else r = next.value;
      }
      if (l.length === 0 && r.length === 0 && leftDone && rightDone) return true;
      if ((l.length === 0 && leftDone) || (r.length === 0 && rightDone)) return false;
      const n = Math.min(l.length, r.length);
      if (!l.subarray(0, n).equals(r.subarray(0, n))) return false;
      l = l.subarray(n);
      r = r.subarray(n);
    }
  } finally {
    if (!leftDone) a.destroy();
    if (!rightDone) b.destroy();
  }
}

/** A finished content as a write to it needs it. */
export interface ReadyObject {
  id: string;
  s3Key: string;
  total: number;
}

const differs = () => ServiceError.of('contentAlreadyComplete');

/**
 * Writes to a content that is (or became, while the bytes were sent) complete: a harmless retry
 * when the bytes are the stored ones, 409 otherwise. Nothing is ever changed.
 */
export class ReadyContentRewrites {
  constructor(private readonly ctx: UploadContext) {}

  /** A write to a finished content is a harmless retry when its bytes are the stored ones. */
  async rewrite(
    body: Readable,
    ready: ReadyObject,
    range: ContentRange,
    sha256?: Buffer | null,
  ): Promise<WriteOutcome> {
    const { total } = ready;
    if (range.total !== null && range.total !== total) throw totalConflict(total, range.total);
    if (range.end >= total)
      throw ServiceError.of(
        'rangePastTotal',
        `Content-Range end ${range.end} is not below the content's total ${total}`,
      );
    const stored = await this.stored(ready.s3Key, ready.id, range);
    const sent = exactBody(body, range.end - range.start + 1, { sha256 });
    if (!(await streamsEqual(sent, stored.body))) throw differs();
    return { id: ready.id, completedNow: false, completed: true };
  }

  /**
   * A range that arrived while its content completed (or expired): once complete, it is a retry
   * when its bytes are the stored ones (answered like a write to a ready content), else 409; a
   * content gone is 404. Its staged copy is deleted either way.
   */
  async afterCompletion(record: UploadRecord, range: ContentRange, piece: Piece): Promise<WriteOutcome> {
    const { book, objects } = this.ctx;
    try {
      if (!(await objects.head(record.s3Key))) throw (await book.find(record._id)) ? completing() : expired(record._id);
      // An aligned part went into the S3 upload that the completion closed: nothing to compare it with.
      if (!piece.key)
        throw ServiceError.of(
          'contentAlreadyComplete',
          'the content was completed while these bytes were sent; send them again to have them compared',
        );
      const stored = await this.stored(record.s3Key, record._id, range);
      const sent = await objects.getRange(piece.key, 0, range.end - range.start);
      if (!(await streamsEqual(sent.body, stored.body))) throw differs();
      return { id: record._id, completedNow: false, completed: true };
    } finally {
      if (piece.key) await objects.delete(piece.key).catch(() => undefined);
    }
  }

  /** The stored bytes of `range`; 404 `contentNotFound` when the content was deleted meanwhile (a racing DELETE). */
  private async stored(key: string, id: string, range: ContentRange) {
    try {
      return await this.ctx.objects.getRange(key, range.start, range.end);
    } catch (error) {
      if (isNotFound(error)) throw ServiceError.of('contentNotFound', `there is no content ${id} any more`);
      throw error;
    }
  }
}
