import type { Collection, Db } from 'mongodb';
import type { ByteRange } from '../uploads/ByteRanges';
import { stagedKey, stagingPrefix } from '../uploads/ObjectKeys';
import { randomBytes } from 'node:crypto';
import { partKey } from '../uploads/PartGrid';
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

/** One version of a content's bookkeeping, as stored: inserted once under `_id` `<contentId>:<n>`, never changed. */
interface StateVersion extends Omit<UploadState, '_id' | 'version'> {
  _id: string;
  contentId: string;
  n: number;
  /** Grid part k → the `_id` of the part document this version holds for it (none: never written). */
  partDocs: Record<string, string>;
  /** Part documents this version replaced: deleted once a later version is in place. */
  replaced: string[];
  /** Set by `forget`: the content's bookkeeping is gone, and no writer computed from an older version may bring it back. */
  gone?: boolean;
  at: Date;
}

/** Where a content's latest version was last seen (a hint: it may lag, never lead). */
interface Head {
  _id: string;
  n: number;
}

const VERSION_DIGITS = 10;
const versionId = (contentId: string, n: number) => `${contentId}:${String(n).padStart(VERSION_DIGITS, '0')}`;

/**
 * The bookkeeping of unfinished uploads, read and written by `_id` only (FerretDB answers `_id`
 * lookups in about a millisecond but scans a collection for any other filter).
 *
 * A content's bookkeeping is a chain of insert-only versions (`upload_versions`,
 * `<contentId>:<n>`): to change it, a writer reads the latest version n, computes the next state,
 * writes the part documents that changed under new `_id`s (`part_ranges`), and inserts version
 * n+1 naming them. Inserting a document with a given `_id` is atomic on FerretDB and MongoDB
 * alike, so of writers computing from the same version exactly one commits; the others get
 * `false` and must read again. That insert is the compare-and-set that fences every claim kept in
 * the bookkeeping (part writes, assemblies, completion): a holder whose claim was taken over
 * computes from a version that is no longer the latest, or finds another holder in the latest.
 */
export class UploadLedger {
  private readonly versions: Collection<StateVersion>;
  private readonly heads: Collection<Head>;
  private readonly legacyStates: Collection<UploadState>;
  private readonly partRanges: Collection<StoredPartRanges>;
  private readonly cleanups: Collection<PendingCleanup>;

  constructor(db: Db) {
    this.versions = db.collection<StateVersion>('upload_versions');
    this.heads = db.collection<Head>('upload_heads');
    this.legacyStates = db.collection<UploadState>('upload_states');
    this.partRanges = db.collection<StoredPartRanges>('part_ranges');
    this.cleanups = db.collection<PendingCleanup>('pending_cleanups');
  }

  /** The logical id of part k of a content (also the `_id` of part documents written before versions). */
  static partId(contentId: string, k: number): string {
    return `${contentId}:p${k}`;
  }

  /** The latest version of a content's bookkeeping (`version` says which; 0: none written yet). */
  async state(contentId: string): Promise<UploadState> {
    const latest = await this.latest(contentId);
    if (latest) return toState(latest);
    const legacy = await this.legacyStates.findOne({ _id: contentId });
    return legacy ? { ...legacy, version: 0 } : emptyUploadState(contentId);
  }

  /** Part k as the given version of the state (or the latest) holds it. */
  async part(contentId: string, k: number, state?: UploadState): Promise<PartRanges> {
    const id = UploadLedger.partId(contentId, k);
    const ref = (state ?? (await this.state(contentId))).partDocs?.[partKey(k)] ?? id;
    const stored = await this.partRanges.findOne({ _id: ref });
    if (!stored) return { _id: id, contentId, k, pieces: [], stored: false, assembling: null };
    return { ...stored, _id: id, pieces: stored.pieces.map((p) => decodePiece(contentId, p)) };
  }

  /**
   * Commits `state` (read as version `state.version`) with the changed `parts` as the next
   * version. False, with nothing changed that any reader sees, when another writer committed
   * that version first (or the bookkeeping was forgotten meanwhile).
   */
  async commit(state: UploadState, parts: PartRanges[]): Promise<boolean> {
    const contentId = state._id;
    const n = (state.version ?? 0) + 1;
    const nonce = randomBytes(4).toString('hex');
    const partDocs = { ...(state.partDocs ?? {}) };
    const replaced: string[] = [];
    for (const part of parts) {
      const docId = `${UploadLedger.partId(contentId, part.k)}:${n}.${nonce}`;
      await this.partRanges.insertOne({ ...part, _id: docId, pieces: part.pieces.map((p) => encodePiece(contentId, p)) });
      const old = partDocs[partKey(part.k)];
      if (old) replaced.push(old);
      partDocs[partKey(part.k)] = docId;
    }
    const { _id: _ignored, version: _v, partDocs: _p, ...fields } = state;
    try {
      await this.versions.insertOne({ ...fields, _id: versionId(contentId, n), contentId, n, partDocs, replaced, at: new Date() });
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
      // Lost the race: the part documents written for it are nobody's.
      await this.partRanges.deleteMany({ _id: { $in: Object.values(partDocs).filter((d) => d.endsWith(`:${n}.${nonce}`)) } }).catch(() => undefined);
      return false;
    }
    state.version = n;
    state.partDocs = partDocs;
    void this.tidy(contentId, n).catch(() => undefined); // garbage only, off the request path: a later commit tries again
    return true;
  }

  /** Writes `state`'s fields as the next version, whatever the latest is (for repairs and tests). */
  async saveState(state: UploadState): Promise<void> {
    for (;;) {
      const latest = await this.state(state._id);
      if (await this.commit({ ...state, version: latest.version, partDocs: latest.partDocs }, [])) return;
    }
  }

  /** Writes part k as the next version, whatever the latest is (for repairs and tests). */
  async savePart(part: PartRanges): Promise<void> {
    for (;;) {
      if (await this.commit(await this.state(part.contentId), [part])) return;
    }
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

  /**
   * Removes the bookkeeping of a content with parts 1..partCount. A last version marks it gone
   * first, so that a writer still computing from an older version cannot bring it back.
   */
  async forget(contentId: string, partCount: number): Promise<void> {
    let latest = await this.latest(contentId);
    for (;;) {
      const n = (latest?.n ?? 0) + 1;
      try {
        await this.versions.insertOne({ ...emptyFields(), _id: versionId(contentId, n), contentId, n, partDocs: {}, replaced: [], gone: true, at: new Date() });
        break;
      } catch (error) {
        if (!isDuplicateKey(error)) throw error;
        latest = await this.latest(contentId);
      }
    }
    const docs = new Set<string>([...Object.values(latest?.partDocs ?? {}), ...(latest?.replaced ?? [])]);
    for (let k = 1; k <= partCount; k++) docs.add(UploadLedger.partId(contentId, k));
    for (const id of docs) await this.partRanges.deleteOne({ _id: id });
    const n = (latest?.n ?? 0) + 1;
    await this.setHead(contentId, n);
    for (let m = Math.max(1, n - 3); m < n; m++) await this.versions.deleteOne({ _id: versionId(contentId, m) });
    await this.legacyStates.deleteOne({ _id: contentId });
  }

  /**
   * Deletes the 'gone' marks `forget` left before `before`, with their head hints: by then no
   * writer that computed from a version before the mark can still be at work (its claims and the
   * content lock ran out long ago). Few documents; read with a filter once per sweep.
   */
  async dropGoneMarks(before: Date, limit: number): Promise<number> {
    const marks = await this.versions.find({ gone: true, at: { $lt: before } }).limit(limit).toArray();
    for (const mark of marks) {
      await this.heads.deleteOne({ _id: mark.contentId });
      await this.versions.deleteOne({ _id: mark._id });
    }
    return marks.length;
  }

  /** The latest version: from the head hint, probing forward by `_id` until a miss. */
  private async latest(contentId: string): Promise<StateVersion | null> {
    const hint = (await this.heads.findOne({ _id: contentId }))?.n ?? 0;
    let found: StateVersion | null = null;
    let n = hint;
    if (n > 0) {
      found = await this.versions.findOne({ _id: versionId(contentId, n) });
      if (!found) {
        // Tidied away after the hint was read: later versions exist; find them by range (rare).
        found = await this.versions.find({ contentId }).sort({ n: -1 }).limit(1).next();
        if (!found) return null;
        n = found.n;
      }
    }
    for (;;) {
      const next = await this.versions.findOne({ _id: versionId(contentId, n + 1) });
      if (!next) return found;
      found = next;
      n += 1;
    }
  }

  /** After version n: the hint moves on; then what versions before n-1 replaced, and version n-2, go. */
  private async tidy(contentId: string, n: number): Promise<void> {
    await this.setHead(contentId, n);
    if (n < 3) return;
    const older = await this.versions.findOne({ _id: versionId(contentId, n - 1) });
    for (const id of older?.replaced ?? []) await this.partRanges.deleteOne({ _id: id });
    await this.versions.deleteOne({ _id: versionId(contentId, n - 2) });
  }

  private async setHead(contentId: string, n: number): Promise<void> {
    try {
      await this.heads.updateOne({ _id: contentId, n: { $lt: n } }, { $set: { n } }, { upsert: true });
    } catch (error) {
      if (!isDuplicateKey(error)) throw error; // a head with a later n exists already
    }
  }
}

function emptyFields(): Omit<UploadState, '_id' | 'version' | 'partDocs'> {
  return { total: null, lastByte: -1, parts: {}, completing: null };
}

function toState(v: StateVersion): UploadState {
  if (v.gone) return { ...emptyUploadState(v.contentId), version: v.n, partDocs: {} };
  const { _id: _ignored, contentId, n, replaced: _r, gone: _g, at: _a, ...fields } = v;
  return { ...fields, _id: contentId, version: n };
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
