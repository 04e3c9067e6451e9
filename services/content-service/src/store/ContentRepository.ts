import type { Collection, Db } from 'mongodb';
import { isDuplicateKey } from './Claims';

export type ContentState = 'uploading' | 'ready';

/**
 * One document per content. It is written when the content is created and once more by the single
 * request that completes it; nothing else writes it, so no two writers ever race on it.
 */
export interface ContentRecord {
  _id: string;
  ownerId: string;
  state: ContentState;
  /** Bytes in the content when known at creation or completion (see `totals` otherwise). */
  total: number | null;
  contentType: string;
  s3Key: string;
  /** S3 multipart upload id; null for a content stored with one PutObject. */
  uploadId: string | null;
  /** ETag of the finished object. */
  etag: string | null;
  createdAt: Date;
  expiresAt: Date;
  completedAt: Date | null;
}

interface TotalDoc {
  _id: string;
  total: number;
  at: Date;
}

/** The content-service's records of contents, and of totals declared after creation. */
export class ContentRepository {
  private readonly contents: Collection<ContentRecord>;
  private readonly totals: Collection<TotalDoc>;

  constructor(db: Db) {
    this.contents = db.collection<ContentRecord>('contents');
    this.totals = db.collection<TotalDoc>('totals');
  }

  async ensureIndexes(): Promise<void> {
    await this.contents.createIndex({ ownerId: 1, _id: 1 });
    await this.contents.createIndex({ state: 1, expiresAt: 1 });
  }

  async insert(record: ContentRecord): Promise<void> {
    await this.contents.insertOne(record);
  }

  /** Owner-scoped: another owner's id reads exactly like an unknown one. */
  async find(ownerId: string, id: string): Promise<ContentRecord | null> {
    return this.contents.findOne({ _id: id, ownerId });
  }

  /** The total of a content: from its record, or as declared later by some request. */
  async totalOf(record: ContentRecord): Promise<number | null> {
    if (record.total !== null) return record.total;
    return (await this.totals.findOne({ _id: record._id }))?.total ?? null;
  }

  /** Declares the total once (first insert wins); returns the total now in force. */
  async declareTotal(id: string, total: number, now: Date): Promise<number> {
    try {
      await this.totals.insertOne({ _id: id, total, at: now });
      return total;
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
      return (await this.totals.findOne({ _id: id }))!.total;
    }
  }

  /** Written only by the holder of the completion claim. */
  async markReady(id: string, total: number, etag: string, now: Date): Promise<void> {
    await this.contents.updateOne({ _id: id }, { $set: { state: 'ready', total, etag, completedAt: now } });
  }

  async findExpired(now: Date, limit: number): Promise<ContentRecord[]> {
    return this.contents.find({ state: 'uploading', expiresAt: { $lt: now } }).limit(limit).toArray();
  }

  async remove(id: string): Promise<void> {
    await this.totals.deleteOne({ _id: id });
    await this.contents.deleteOne({ _id: id });
  }

  async forgetTotal(id: string): Promise<void> {
    await this.totals.deleteOne({ _id: id });
  }
}
