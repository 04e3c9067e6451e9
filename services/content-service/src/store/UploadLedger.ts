import type { Collection, Db } from 'mongodb';
import type { ByteRange } from '../uploads/ByteRanges';
import { stagedKey, stagingPrefix } from '../uploads/ObjectKeys';
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
  /**
   * The last byte received (-1: none). Exact while the total is unknown; once it is known, only
   * the grid part this byte lies in is kept up to date (the last part with bytes).
   */
  lastByte: number;
  /** S3 part number k → its ETag and size, under key `p<k>`. */
  parts: Record<string, { etag: string; size: number }>;
  /** Set (and renewed) while one request completes the content. */
  completing: Date | null;
  /** Which request holds the completion claim (its fencing token). */
  completingBy?: string | null;
  /** Set when the sweeper has decided to remove the upload (expired): writes are refused from then on. */
  expiring?: Date | null;
}

/** The ranges received inside one 64 MiB grid part (as the service works with them). */
export interface PartRanges {
  _id: string;
  contentId: string;
  k: number;
  pieces: Piece[];
  /** Whether S3 part k holds its final bytes. */
  stored: boolean;
  /** Set (and renewed) while one request assembles the part from its pieces. */
  assembling: Date | null;
  /** Which request holds the assembly claim (its fencing token). */
  assemblingBy?: string | null;
  /** Set (and renewed: `since`) while one request streams an aligned range straight into S3 part k (`by`: that request). */
  writing?: { since: Date; by: string } | null;
}

/**
 * A part's document as stored: each piece one short string, `a-b` for bytes written straight into
 * the S3 part, `a-b <nonce> <sha256>` for a staged piece whose object is `staging/<id>/a-b.<nonce>`
 * (or `a-b <key> <sha256>` when its key is not of that form). FerretDB reads and writes a document
 * of 64 such strings about four times faster than one of 64 sub-documents, and the part's document
 * is read and written for every piece received. Sub-documents written by earlier versions are read too.
 */
interface StoredPartRanges extends Omit<PartRanges, 'pieces'> {
  pieces: (string | Piece)[];
}

export { stagedKey, stagingPrefix };

export function encodePiece(contentId: string, piece: Piece): string {
  const range = `${piece.a}-${piece.b}`;
  if (piece.kind === 'part') return range;
  const ours = `${stagingPrefix(contentId)}${range}.`;
  const key = piece.key!;
  const nonce = key.startsWith(ours) && !/[\s/]/.test(key.slice(ours.length)) ? key.slice(ours.length) : key;
  return `${range} ${nonce} ${piece.sha256 ?? '-'}`;
}

export function decodePiece(contentId: string, stored: string | Piece): Piece {
  if (typeof stored !== 'string') return stored;
  const [range, keyOrNonce, sha256] = stored.split(' ');
  const dash = range!.indexOf('-');
  const a = Number(range!.slice(0, dash));
  const b = Number(range!.slice(dash + 1));
  if (keyOrNonce === undefined) return { a, b, kind: 'part', key: null, sha256: null };
  const key = keyOrNonce.includes('/') ? keyOrNonce : stagedKey(contentId, a, b, keyOrNonce);
  return { a, b, kind: 'staged', key, sha256: sha256 === '-' || sha256 === undefined ? null : sha256 };
}

/** A completed (or completing) content whose staged objects and bookkeeping are still to be deleted. */
export interface PendingCleanup {
  _id: string;
  total: number;
  since: Date;
}

/**
 * The bookkeeping of unfinished uploads, in documents read and written by `_id` only: one per
 * content and one per grid part that received bytes. (FerretDB answers `_id` lookups in about a
 * millisecond but scans a collection for any other filter.) Callers hold the content's or the
 * part's lock around every read-modify-write.
 */
export class UploadLedger {
  private readonly states: Collection<UploadState>;
  private readonly partRanges: Collection<StoredPartRanges>;
  private readonly cleanups: Collection<PendingCleanup>;

  constructor(db: Db) {
    this.states = db.collection<UploadState>('upload_states');
    this.partRanges = db.collection<StoredPartRanges>('part_ranges');
    this.cleanups = db.collection<PendingCleanup>('pending_cleanups');
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
    const stored = await this.partRanges.findOne({ _id: id });
    if (!stored) return { _id: id, contentId, k, pieces: [], stored: false, assembling: null };
    return { ...stored, pieces: stored.pieces.map((p) => decodePiece(contentId, p)) };
  }

  async savePart(part: PartRanges): Promise<void> {
    await upsert(this.partRanges, { ...part, pieces: part.pieces.map((p) => encodePiece(part.contentId, p)) });
  }

  /** Notes that a content's staging and bookkeeping must go once it is complete (kept until they have). */
  async noteCleanup(contentId: string, total: number, now: Date): Promise<void> {
    await upsert(this.cleanups, { _id: contentId, total, since: now });
  }

  async cleanupDone(contentId: string): Promise<void> {
    await this.cleanups.deleteOne({ _id: contentId });
  }

  /** Cleanups noted and not done: few (a completion under way, or one whose cleanup failed), so read without a filter. */
  async pendingCleanups(limit: number): Promise<PendingCleanup[]> {
    return this.cleanups.find({}).limit(limit).toArray();
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
