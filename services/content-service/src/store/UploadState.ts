import type { ByteRange } from '../uploads/ByteRanges';
import { stagedKey, stagingPrefix } from '../uploads/ObjectKeys';

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
  /**
   * Parts (`p<k>`) whose staged pieces cover them: their assembly was claimed at least once, so
   * they are stored or will be. With `parts`, it tells the request that receives a content's last
   * bytes that it must see the content completed, waiting for assemblies still running.
   */
  covered?: Record<string, true>;
  /** Set when the sweeper has decided to remove the upload (expired): writes are refused from then on. */
  expiring?: Date | null;
  /** The version this state was read as (0: none written yet); a commit of it inserts the next one. */
  version?: number;
  /** Grid part k (`p<k>`) → the `_id` of its document in this version. */
  partDocs?: Record<string, string>;
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
export interface StoredPartRanges extends Omit<PartRanges, 'pieces'> {
  pieces: (string | Piece)[];
}

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

export function emptyFields(): Omit<UploadState, '_id' | 'version' | 'partDocs'> {
  return { total: null, lastByte: -1, parts: {}, completing: null };
}

export function emptyUploadState(contentId: string): UploadState {
  return { _id: contentId, total: null, lastByte: -1, parts: {}, completing: null };
}
