import type { Collection, Db } from 'mongodb';
import type { ByteRange } from '../uploads/ByteRanges';
import { isDuplicateKey } from './Claims';

/** A range of bytes received for a content: an aligned S3 part, or a piece staged in S3. */
export interface ReceivedRange extends ByteRange {
  _id: string;
  contentId: string;
  kind: 'part' | 'staged';
  /** Staged pieces: the S3 object holding the bytes, and their SHA-256 (to recognise a retry after assembly). */
  key: string | null;
  sha256: string | null;
  at: Date;
}

/** An S3 multipart part that holds its final bytes. */
export interface StoredPart {
  _id: string;
  contentId: string;
  k: number;
  etag: string;
  size: number;
  at: Date;
}

/**
 * What has been received of each unfinished content, one small document per range and per S3
 * part (never a growing array in the content record, and never two writers on one document).
 */
export class UploadLedger {
  private readonly ranges: Collection<ReceivedRange>;
  private readonly parts: Collection<StoredPart>;

  constructor(db: Db) {
    this.ranges = db.collection<ReceivedRange>('received_ranges');
    this.parts = db.collection<StoredPart>('parts');
  }

  async ensureIndexes(): Promise<void> {
    await this.ranges.createIndex({ contentId: 1, a: 1 });
    await this.parts.createIndex({ contentId: 1, k: 1 });
  }

  static rangeId(contentId: string, r: ByteRange): string {
    return `${contentId}:${r.a}-${r.b}`;
  }

  /** Received ranges that share at least one byte with [a, b], in order. */
  async overlapping(contentId: string, r: ByteRange): Promise<ReceivedRange[]> {
    return this.ranges.find({ contentId, a: { $lte: r.b }, b: { $gte: r.a } }).sort({ a: 1 }).toArray();
  }

  async allRanges(contentId: string): Promise<ReceivedRange[]> {
    return this.ranges.find({ contentId }).sort({ a: 1 }).toArray();
  }

  /** The last received byte, or -1. */
  async lastReceivedByte(contentId: string): Promise<number> {
    const [last] = await this.ranges.find({ contentId }).sort({ b: -1 }).limit(1).toArray();
    return last?.b ?? -1;
  }

  /** Records (or, for a retry of the same range, replaces) a received range. Returns the replaced one. */
  async putRange(range: ReceivedRange): Promise<ReceivedRange | null> {
    for (;;) {
      const previous = await this.ranges.findOne({ _id: range._id });
      try {
        if (previous) await this.ranges.replaceOne({ _id: range._id }, range);
        else await this.ranges.insertOne(range);
        return previous;
      } catch (error) {
        if (!isDuplicateKey(error)) throw error; // a concurrent retry inserted it first: replace it
      }
    }
  }

  async removeRange(id: string): Promise<void> {
    await this.ranges.deleteOne({ _id: id });
  }

  async forgetPieceObject(id: string, key: string): Promise<void> {
    await this.ranges.updateOne({ _id: id, key }, { $set: { key: null } });
  }

  static partId(contentId: string, k: number): string {
    return `${contentId}:p${k}`;
  }

  async putPart(part: StoredPart): Promise<void> {
    for (;;) {
      try {
        await this.parts.replaceOne({ _id: part._id }, part, { upsert: true });
        return;
      } catch (error) {
        if (!isDuplicateKey(error)) throw error;
      }
    }
  }

  async hasPart(contentId: string, k: number): Promise<boolean> {
    return (await this.parts.countDocuments({ _id: UploadLedger.partId(contentId, k) }, { limit: 1 })) > 0;
  }

  async partCount(contentId: string): Promise<number> {
    return this.parts.countDocuments({ contentId });
  }

  async partsOf(contentId: string): Promise<StoredPart[]> {
    return this.parts.find({ contentId }).sort({ k: 1 }).toArray();
  }

  async forget(contentId: string): Promise<void> {
    await this.ranges.deleteMany({ contentId });
    await this.parts.deleteMany({ contentId });
  }
}
