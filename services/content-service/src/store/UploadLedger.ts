import type { Collection, Db } from 'mongodb';
import type { ByteRange } from '../uploads/ByteRanges';
import { isDuplicateKey } from './Claims';

/** A range received for a content: an aligned S3 part, or a piece staged as its own S3 object. */
export interface Piece extends ByteRange {
  kind: 'part' | 'staged';
  /** Staged pieces: the S3 object holding the bytes, and their SHA-256 (to recognise a retry after assembly). */
  key: string | null;
  sha256: string | null;
}

/** What an unfinished content has: its total once named, the last byte seen, its stored S3 parts. */
export interface UploadState {
  _id: string;
  total: number | null;
  lastByte: number;
  /** S3 part number k → its ETag and size, under key `p<k>`. */
  parts: Record<string, { etag: string; size: number }>;
  /** Set while one request completes the content. */
  completing: Date | null;
}

/** The ranges received inside one 64 MiB grid part. */
export interface PartRanges {
  _id: string;
  contentId: string;
  k: number;
  pieces: Piece[];
  /** Whether S3 part k holds its final bytes. */
  stored: boolean;
  /** Set while one request assembles the part from its pieces. */
  assembling: Date | null;
}

/**
 * The bookkeeping of unfinished uploads, in documents read and written by `_id` only: one per
 * content and one per grid part that received bytes. (FerretDB answers `_id` lookups in about a
 * millisecond but scans a collection for any other filter.) Callers hold the content's or the
 * part's lock around every read-modify-write.
 */
export class UploadLedger {
  private readonly states: Collection<UploadState>;
  private readonly partRanges: Collection<PartRanges>;

  constructor(db: Db) {
    this.states = db.collection<UploadState>('upload_states');
    this.partRanges = db.collection<PartRanges>('part_ranges');
  }

  static partId(contentId: string, k: number): string {
    return `${contentId}:p${k}`;
  }

  async state(contentId: string): Promise<UploadState> {
    return (await this.states.findOne({ _id: contentId })) ?? emptyUploadState(contentId);
  }

  async saveState(state: UploadState): Promise<void> {
    await upsert(this.states, state);
  }

  async part(contentId: string, k: number): Promise<PartRanges> {
    const id = UploadLedger.partId(contentId, k);
    return (await this.partRanges.findOne({ _id: id })) ?? { _id: id, contentId, k, pieces: [], stored: false, assembling: null };
  }

  async savePart(part: PartRanges): Promise<void> {
    await upsert(this.partRanges, part);
  }

  /** Removes the bookkeeping of a content with parts 1..partCount. */
  async forget(contentId: string, partCount: number): Promise<void> {
    for (let k = 1; k <= partCount; k++) await this.partRanges.deleteOne({ _id: UploadLedger.partId(contentId, k) });
    await this.states.deleteOne({ _id: contentId });
  }
}

export function emptyUploadState(contentId: string): UploadState {
  return { _id: contentId, total: null, lastByte: -1, parts: {}, completing: null };
}

async function upsert<T extends { _id: string }>(collection: Collection<T>, doc: T): Promise<void> {
  for (;;) {
    try {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the driver's filter typing cannot see that T has a string _id
      await collection.replaceOne({ _id: doc._id } as any, doc, { upsert: true });
      return;
    } catch (error) {
      if (!isDuplicateKey(error)) throw error; // two first writes raced: the second becomes a replace
    }
  }
}
