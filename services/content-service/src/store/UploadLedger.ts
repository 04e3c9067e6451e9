import type { Collection, Db, WithoutId } from 'mongodb';
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

/** One version of a content's bookkeeping, as stored: inserted once under `_id` `<contentId>:<n>`, never changed but into a stub. */
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

/**
 * What an old version becomes once two later ones exist: its state is dropped, its `_id` stays
 * taken, so that no writer that computed from an older version can ever insert it again.
 */
interface StubVersion {
  _id: string;
  contentId: string;
  n: number;
  stub: true;
  at: Date;
}

type StoredVersion = StateVersion | StubVersion;

const isStub = (v: StoredVersion): v is StubVersion => 'stub' in v && v.stub === true;

/** Where a content's latest version was last seen (a hint: it may lag, never lead). */
interface Head {
  _id: string;
  n: number;
}

const VERSION_DIGITS = 10;
const versionId = (contentId: string, n: number) => `${contentId}:${String(n).padStart(VERSION_DIGITS, '0')}`;
/** How many contents' latest versions and how many part documents a process keeps in memory. */
const RECENT_VERSIONS = 1000;
const RECENT_PARTS = 256;
/** A remembered version older than this is looked up again from the head hint. */
const RECENT_MAX_AGE_MS = 10 * 60_000;

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
 *
 * The latest version is found by probing n+1, n+2 … by `_id` from a starting n (the version this
 * process saw last, else a head hint) until a miss. That is only sound because no version's `_id`
 * is ever freed while the content lives: versions older than the latest but one are replaced by
 * stubs, and all of them go only an hour after `forget`.
 */
export class UploadLedger {
  private readonly versions: Collection<StoredVersion>;
  private readonly heads: Collection<Head>;
  private readonly legacyStates: Collection<UploadState>;
  private readonly partRanges: Collection<StoredPartRanges>;
  private readonly cleanups: Collection<PendingCleanup>;
  /** The latest version this process has seen of each content (immutable documents: safe to keep). */
  private readonly recent = new Map<string, { version: StateVersion; at: number }>();
  /** Part documents by `_id` (immutable once written). */
  private readonly recentParts = new Map<string, StoredPartRanges>();

  constructor(db: Db) {
    this.versions = db.collection<StoredVersion>('upload_versions');
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
    const ref = (state ?? (await this.state(contentId))).partDocs?.[partKey(k)];
    const stored = ref ? (this.recentParts.get(ref) ?? (await this.partRanges.findOne({ _id: ref }))) : await this.partRanges.findOne({ _id: id });
    if (!stored) return { _id: id, contentId, k, pieces: [], stored: false, assembling: null };
    if (ref) remember(this.recentParts, ref, stored, RECENT_PARTS);
    return { ...structuredClone(stored), _id: id, pieces: stored.pieces.map((p) => decodePiece(contentId, p)) };
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
    const written: StoredPartRanges[] = [];
    for (const part of parts) {
      const doc: StoredPartRanges = { ...part, _id: `${UploadLedger.partId(contentId, part.k)}:${n}.${nonce}`, pieces: part.pieces.map((p) => encodePiece(contentId, p)) };
      await this.partRanges.insertOne(doc);
      written.push(doc);
      const old = partDocs[partKey(part.k)];
      if (old) replaced.push(old);
      partDocs[partKey(part.k)] = doc._id;
    }
    const { _id: _ignored, version: _v, partDocs: _p, ...fields } = state;
    const version: StateVersion = { ...fields, _id: versionId(contentId, n), contentId, n, partDocs, replaced, at: new Date() };
    try {
      await this.versions.insertOne(version);
    } catch (error) {
      if (!isDuplicateKey(error)) throw error;
      // Lost the race: the part documents written for it are nobody's.
      await this.partRanges.deleteMany({ _id: { $in: written.map((d) => d._id) } }).catch(() => undefined);
      this.recent.delete(contentId);
      return false;
    }
    const previous = this.recent.get(contentId)?.version;
    remember(this.recent, contentId, { version: structuredClone(version), at: Date.now() }, RECENT_VERSIONS);
    for (const doc of written) remember(this.recentParts, doc._id, structuredClone(doc), RECENT_PARTS);
    state.version = n;
    state.partDocs = partDocs;
    // Garbage only, off the request path: a later commit tries again.
    void this.tidy(contentId, n, previous?.n === n - 1 ? previous.replaced : undefined).catch(() => undefined);
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
   * first, so that a writer still computing from an older version cannot bring it back; the
   * versions themselves stay (as stubs) until `dropGoneMarks`, so that none of their `_id`s is free.
   */
  async forget(contentId: string, partCount: number): Promise<void> {
    let latest = await this.latest(contentId);
    let n: number;
    for (;;) {
      n = (latest?.n ?? 0) + 1;
      try {
        await this.versions.insertOne({ ...emptyFields(), _id: versionId(contentId, n), contentId, n, partDocs: {}, replaced: [], gone: true, at: new Date() });
        break;
      } catch (error) {
        if (!isDuplicateKey(error)) throw error;
        latest = await this.latest(contentId);
      }
    }
    this.recent.delete(contentId);
    await this.setHead(contentId, n);
    const docs = new Set<string>([...Object.values(latest?.partDocs ?? {}), ...(latest?.replaced ?? [])]);
    for (let k = 1; k <= partCount; k++) docs.add(UploadLedger.partId(contentId, k));
    for (const id of docs) await this.partRanges.deleteOne({ _id: id });
    for (let m = Math.max(1, n - 2); m < n; m++) await this.stub(contentId, m);
    await this.legacyStates.deleteOne({ _id: contentId });
  }

  /**
   * Deletes the bookkeeping forgotten before `before` for good (its stubs, its 'gone' mark, its
   * head hint): by then no writer that computed from a version before the mark can still be at
   * work (its claims and the content lock ran out long ago). Read with a filter once per sweep.
   */
  async dropGoneMarks(before: Date, limit: number): Promise<number> {
    const marks = await this.versions.find({ gone: true, at: { $lt: before } }).limit(limit).toArray();
    for (const mark of marks) {
      this.recent.delete(mark.contentId);
      await this.versions.deleteMany({ contentId: mark.contentId, _id: { $ne: mark._id } });
      await this.heads.deleteOne({ _id: mark.contentId });
      await this.versions.deleteOne({ _id: mark._id });
    }
    return marks.length;
  }

  /** The latest version: from the one this process saw last (or the head hint), probing forward by `_id` until a miss. */
  private async latest(contentId: string): Promise<StateVersion | null> {
    const known = this.recent.get(contentId);
    let found: StoredVersion | null = null;
    let n: number;
    if (known && Date.now() - known.at < RECENT_MAX_AGE_MS) {
      found = known.version;
      n = found.n;
    } else {
      n = (await this.heads.findOne({ _id: contentId }))?.n ?? 0;
      if (n > 0) {
        found = await this.versions.findOne({ _id: versionId(contentId, n) });
        if (!found) return null; // dropped for good (dropGoneMarks) since the hint was read
      }
    }
    for (;;) {
      const next = await this.versions.findOne({ _id: versionId(contentId, n + 1) });
      if (!next) break;
      found = next;
      n += 1;
    }
    if (found && isStub(found)) throw new Error(`the bookkeeping of ${contentId} ends in a stub at version ${found.n}`);
    if (found) remember(this.recent, contentId, { version: found, at: Date.now() }, RECENT_VERSIONS);
    return found;
  }

  /** After version n: the hint moves on; the part documents only version n-2 named go, and n-2 becomes a stub. */
  private async tidy(contentId: string, n: number, replacedByPrevious?: string[]): Promise<void> {
    await this.setHead(contentId, n);
    if (n < 3) return;
    let replaced = replacedByPrevious;
    if (!replaced) {
      const previous = await this.versions.findOne({ _id: versionId(contentId, n - 1) });
      replaced = previous && !isStub(previous) ? previous.replaced : [];
    }
    for (const id of replaced) {
      this.recentParts.delete(id);
      await this.partRanges.deleteOne({ _id: id });
    }
    await this.stub(contentId, n - 2);
  }

  /** Drops version m's state and keeps its `_id` taken. */
  private async stub(contentId: string, m: number): Promise<void> {
    const stub: Omit<StubVersion, '_id'> = { contentId, n: m, stub: true, at: new Date() };
    await this.versions.replaceOne({ _id: versionId(contentId, m) }, stub as WithoutId<StoredVersion>);
  }

  private async setHead(contentId: string, n: number): Promise<void> {
    try {
      await this.heads.updateOne({ _id: contentId, n: { $lt: n } }, { $set: { n } }, { upsert: true });
    } catch (error) {
      if (!isDuplicateKey(error)) throw error; // a head with a later n exists already
    }
  }
}

/** Keeps `value` under `key` as the newest entry, dropping the oldest beyond `limit`. */
function remember<V>(cache: Map<string, V>, key: string, value: V, limit: number): void {
  cache.delete(key);
  cache.set(key, value);
  if (cache.size > limit) cache.delete(cache.keys().next().value!);
}

function emptyFields(): Omit<UploadState, '_id' | 'version' | 'partDocs'> {
  return { total: null, lastByte: -1, parts: {}, completing: null };
}

/** A state of its own (the version may be a remembered one that must not change). */
function toState(remembered: StateVersion): UploadState {
  const v = structuredClone(remembered);
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
