import type { Collection, Db } from 'mongodb';
import { partKey } from '../uploads/PartGrid';

export type ContentState = 'uploading' | 'completing' | 'ready';

export interface StoredPart {
  etag: string;
  size: number;
  at: Date;
}

/** One document per content; every change to it is a single-document atomic update. */
export interface ContentRecord {
  _id: string;
  ownerId: string;
  state: ContentState;
  /** Bytes in the whole content; null until some request declares it. */
  total: number | null;
  contentType: string;
  s3Key: string;
  /** S3 multipart upload id; null for a content stored with one PutObject. */
  uploadId: string | null;
  /** S3 part number k → its ETag, under key `p<k>`. */
  parts: Record<string, StoredPart>;
  /** How many distinct parts are in `parts`. */
  partCount: number;
  /** ETag of the finished object. */
  etag: string | null;
  createdAt: Date;
  updatedAt: Date;
  expiresAt: Date;
  completingSince: Date | null;
  completedAt: Date | null;
}

/** The content-service's MongoDB collection of content records. */
export class ContentRepository {
  private readonly contents: Collection<ContentRecord>;

  constructor(db: Db) {
    this.contents = db.collection<ContentRecord>('contents');
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

  /** Sets the total once; returns the total now stored (which may be another request's). */
  async declareTotal(id: string, total: number, now: Date): Promise<number | null> {
    await this.contents.updateOne({ _id: id, total: null }, { $set: { total, updatedAt: now } });
    const after = await this.contents.findOne({ _id: id }, { projection: { total: 1 } });
    return after?.total ?? null;
  }

  /**
   * Records part k's ETag while the content is still uploading. The first record of k counts it;
   * a retry only replaces the ETag. Returns false when the content is no longer uploading.
   */
  async recordPart(id: string, k: number, part: StoredPart): Promise<boolean> {
    const path = `parts.${partKey(k)}`;
    const first = await this.contents.updateOne(
      { _id: id, state: 'uploading', [path]: { $exists: false } },
      { $set: { [path]: part, updatedAt: part.at }, $inc: { partCount: 1 } },
    );
    if (first.matchedCount === 1) return true;
    const retry = await this.contents.updateOne({ _id: id, state: 'uploading' }, { $set: { [path]: part, updatedAt: part.at } });
    return retry.matchedCount === 1;
  }

  /**
   * Decides completion: exactly one caller gets the record back, moved to `completing`. The
   * condition (total known, every part present) is checked by the same single update.
   */
  async claimCompletion(id: string, total: number, expectedParts: number, now: Date): Promise<ContentRecord | null> {
    return this.contents.findOneAndUpdate(
      { _id: id, state: 'uploading', total, partCount: expectedParts },
      { $set: { state: 'completing', completingSince: now, updatedAt: now } },
      { returnDocument: 'after' },
    );
  }

  /** Takes over a completion whose owner stopped before finishing it (crash, lost connection). */
  async claimStuckCompletion(id: string, staleBefore: Date, now: Date): Promise<ContentRecord | null> {
    return this.contents.findOneAndUpdate(
      { _id: id, state: 'completing', completingSince: { $lt: staleBefore } },
      { $set: { completingSince: now, updatedAt: now } },
      { returnDocument: 'after' },
    );
  }

  async markReady(id: string, etag: string, now: Date): Promise<void> {
    await this.contents.updateOne({ _id: id, state: 'completing' }, { $set: { state: 'ready', etag, completedAt: now, completingSince: null, updatedAt: now } });
  }

  /** Gives a failed completion back so that a later request can try again. */
  async releaseCompletion(id: string, now: Date): Promise<void> {
    await this.contents.updateOne({ _id: id, state: 'completing' }, { $set: { state: 'uploading', completingSince: null, updatedAt: now } });
  }

  async ping(db: Db): Promise<void> {
    await db.command({ ping: 1 });
  }
}
