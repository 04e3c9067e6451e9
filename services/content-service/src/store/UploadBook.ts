/**
 * The bookkeeping of unfinished uploads: one contract, kept by RedisUploadBook in production
 * and by an in-memory book in unit tests; test/uploadBook.contract.int.test.ts holds both to it.
 *
 * A finished content has no entry here: its S3 object is its record. An upload's entry is its
 * record (who, where, until when) and its state: what it received and the claims on its work,
 * changed only by compare-and-set on a version number (`commit`), which is what fences a holder
 * whose claim was taken over. Every operation reads or writes one upload's entry by its id, so
 * its cost does not grow with the number of uploads held; `expired` and `pendingCleanups` read
 * an index ordered by time, `ownedUploads` an index per owner ordered by id, a page at a time.
 */
export interface UploadBook {
  /**
   * Writes a new upload's record with empty bookkeeping (version 1). With `maxOwned`, only while
   * the owner's index holds fewer ids, checked and added in one step (racing creations cannot both
   * pass the last place); else OwnedLimitReached, and nothing of the upload stays.
   */
  create(record: UploadRecord, maxOwned?: number): Promise<void>;
  /**
   * The upload's record; null when there is none (never made, completed, or removed). Its `uploadId`
   * is the S3 multipart upload in force: the state's `uploadId` once the upload was restarted.
   */
  find(id: string): Promise<UploadRecord | null>;
  /** The latest state; version 0 (and empty) when the upload has no bookkeeping. */
  state(id: string): Promise<UploadState>;
  /** Part k as version `version` holds it (the latest when not given); throws StaleBookRead once that is no longer the latest. */
  part(id: string, k: number, version?: number): Promise<PartRanges>;
  /**
   * Writes `state` and the changed `parts` as version `state.version + 1`, if the latest is still
   * `state.version`; false, with nothing changed, otherwise (or when the upload has no bookkeeping).
   */
  commit(state: UploadState, parts: PartRanges[]): Promise<boolean>;
  /** Moves an upload's expiry later (never earlier). */
  extend(id: string, expiresAt: Date): Promise<void>;
  /** Ids of uploads whose expiry is before `now`, oldest first, at most `limit`. */
  expired(now: Date, limit: number): Promise<string[]>;
  /**
   * Ids of the owner's uploads (created and not removed) greater than `after` (from the first when
   * null), in id order, at most `limit`: read from a per-owner index, so the cost does not depend
   * on other owners' uploads. An id may name an upload gone meanwhile (its find() answers null).
   */
  ownedUploads(ownerId: string, after: string | null, limit: number): Promise<string[]>;
  /** How many ids the owner's index holds (its unfinished uploads, and any a creation left there when it died). */
  ownedCount(ownerId: string): Promise<number>;
  /**
   * Removes an upload's record and bookkeeping, and its id from its owner's index (also when its
   * creation died before the record was written); no commit computed before succeeds after it.
   */
  remove(id: string): Promise<void>;
  /** Notes that a completed content's staging must go (kept until cleanupDone). */
  noteCleanup(id: string, now: Date): Promise<void>;
  /** Ids of cleanups noted and not done, oldest first, at most `limit`. */
  pendingCleanups(limit: number): Promise<string[]>;
  cleanupDone(id: string): Promise<void>;
}

/** A creation refused: the owner's index holds `held` uploads, and `limit` are allowed. */
export class OwnedLimitReached extends Error {
  override readonly name = 'OwnedLimitReached';
  readonly code = 'CP_ERR_OWNED_LIMIT_REACHED';
  constructor(
    readonly limit: number,
    readonly held: number,
  ) {
    super(`the owner has ${held} unfinished uploads, of ${limit} allowed`);
  }
}

/** A read of a part from a version that is no longer the latest: the reader computes again. */
export class StaleBookRead extends Error {
  override readonly name = 'StaleBookRead';
  readonly code = 'CP_ERR_STALE_BOOK_READ';
}

/** What an unfinished upload is: fixed at its creation but for its expiry. */
export interface UploadRecord {
  _id: string;
  ownerId: string;
  /** Bytes in the content when named by the request that created it (else in the state, once named). */
  total: number | null;
  contentType: string;
  s3Key: string;
  /** The S3 multipart upload (as found: the one in force, see UploadState.uploadId). */
  uploadId: string;
  /** Who created the upload (`bearer:<sub>`, `session:<user>`), carried into the finished object's metadata. */
  uploader: string | null;
  /** The object metadata its S3 upload was begun with (to begin it again the same: see LostUploads). */
  metadata?: Record<string, string>;
  createdAt: Date;
  expiresAt: Date;
}

/** A range received for a content, bytes [a, b]: an aligned S3 part, or a piece staged as its own S3 object. */
export interface Piece {
  a: number;
  b: number;
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
  /** Bytes held against the owner's storage quota by the write that named the total (the record had none). */
  held?: number | null;
  /** Set when the sweeper has decided to remove the upload (expired): writes are refused from then on. */
  expiring?: Date | null;
  /**
   * The S3 multipart upload in force when it is not the record's: set when S3 lost the first one
   * (see LostUploads) and the upload went on in a new one. Commits that record S3 parts check it.
   */
  uploadId?: string | null;
  /** When S3 was first seen not to hold the upload nor its object (see LostUploads); cleared by a restart. */
  lostSince?: Date | null;
  /** The version this state was read as (0: the upload has no bookkeeping). */
  version: number;
}

/** The ranges received inside one 64 MiB grid part. */
export interface PartRanges {
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

export function emptyUploadState(contentId: string, version = 0): UploadState {
  return { _id: contentId, total: null, lastByte: -1, parts: {}, completing: null, version };
}

export function emptyPart(contentId: string, k: number): PartRanges {
  return { contentId, k, pieces: [], stored: false, assembling: null };
}
