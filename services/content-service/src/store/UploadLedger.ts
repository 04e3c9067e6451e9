import type { AnyBulkWriteOperation, Collection, Db, UpdateFilter } from 'mongodb';
import { randomBytes } from 'node:crypto';
import { partKey } from '../uploads/PartGrid';
import { isDuplicateKey } from './Claims';
import {
  isStub,
  RECENT_MAX_AGE_MS,
  VERSION_DIGITS,
  RECENT_PARTS,
  RECENT_VERSIONS,
  remember,
  toState,
  versionId,
  type Head,
  type StateVersion,
  type StoredVersion,
} from './LedgerVersions';
import {
  decodePiece,
  emptyFields,
  emptyUploadState,
  encodePiece,
  type PartRanges,
  type PendingCleanup,
  type StoredPartRanges,
  type UploadState,
} from './UploadState';

export { stagedKey, stagingPrefix } from '../uploads/ObjectKeys';
export { decodePiece, emptyUploadState, encodePiece, type PartRanges, type PendingCleanup, type Piece, type UploadState } from './UploadState';

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
  /** Versions committed here whose garbage is still to go, by content (see scheduleTidy). */
  private readonly untidy = new Map<string, Untidy>();

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

  /**
   * The latest version this process has seen of a content, without a round trip when it has seen
   * one lately; it may be stale (another replica wrote since): `commit` then returns false.
   */
  async lastSeenState(contentId: string): Promise<UploadState> {
    const known = this.recent.get(contentId);
    if (known && Date.now() - known.at < RECENT_MAX_AGE_MS) return toState(known.version);
    return this.state(contentId);
  }

  /** Whether version `n` is still a content's latest (one `_id` lookup of version n+1). */
  async isLatest(contentId: string, n: number): Promise<boolean> {
    if (!(await this.versions.findOne({ _id: versionId(contentId, n + 1) }, { projection: { _id: 1 } }))) return true;
    this.recent.delete(contentId);
    return false;
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
      const doc: StoredPartRanges = {
        ...part,
        _id: partDocId(contentId, part.k, n, nonce),
        pieces: part.pieces.map((p) => encodePiece(contentId, p)),
      };
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
      // (One delete per `_id`: FerretDB v1 answers `$in` over `_id` by a far slower scan.)
      if (written.length > 0)
        await this.partRanges
          .bulkWrite(
            written.map((d) => ({ deleteOne: { filter: { _id: d._id } } })),
            { ordered: false },
          )
          .catch(() => undefined);
      this.recent.delete(contentId);
      return false;
    }
    remember(this.recent, contentId, { version: structuredClone(version), at: Date.now() }, RECENT_VERSIONS);
    for (const doc of written) remember(this.recentParts, doc._id, structuredClone(doc), RECENT_PARTS);
    state.version = n;
    state.partDocs = partDocs;
    this.scheduleTidy(contentId, n, { replaced, partDocs });
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
   * Removes the bookkeeping of a content. A last version marks it gone
   * first, so that a writer still computing from an older version cannot bring it back; the
   * versions themselves stay (as stubs) until `dropGoneMarks`, so that none of their `_id`s is free.
   */
  async forget(contentId: string): Promise<void> {
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
    const untidy = this.untidy.get(contentId);
    if (untidy) {
      clearTimeout(untidy.timer);
      untidy.timer = undefined;
      untidy.waiting.clear();
      this.untidy.delete(contentId);
    }
    await this.setHead(contentId, n);
    // All of the content's part documents, whoever wrote them and whatever tidy did not run (one
    // scan of a collection that holds only unfinished contents' parts).
    await this.partRanges.deleteMany({ contentId });
    await this.stubRange(contentId, 1, n - 1);
    await this.legacyStates.deleteOne({ _id: contentId });
  }

  /**
   * Deletes the bookkeeping forgotten before `before` for good (its stubs, its 'gone' mark, its
   * head hint): by then no writer that computed from a version before the mark can still be at
   * work (its claims and the content lock ran out long ago). Read with a filter once per sweep.
   */
  async dropGoneMarks(before: Date, limit: number): Promise<number> {
    const marks = await this.versions
      .find({ gone: true, at: { $lt: before } })
      .limit(limit)
      .toArray();
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

  /**
   * Garbage only, off the request path: after version n the head hint moves on, the part documents
   * only version n-2 named go, and n-2 becomes a stub. The versions committed here wait and are
   * tidied together, once TIDY_BATCH of them wait or TIDY_DELAY_MS after the first, in three round
   * trips whatever their number (the head, one bulk of deletes, one ranged update for the stubs):
   * on FerretDB every update or delete scans its collection, so one per chunk cost more than the
   * chunk's own inserts. One tidy runs per content at a time; at most MAX_UNTIDY versions wait per
   * content: past that the oldest stays whole (the content's `forget` removes it all the same).
   */
  private scheduleTidy(contentId: string, n: number, committed: Committed): void {
    let entry = this.untidy.get(contentId);
    if (!entry) {
      // Kept only while it has versions waiting or a tidy running (see runTidy).
      entry = { waiting: new Map(), running: false };
      this.untidy.set(contentId, entry);
    }
    entry.waiting.set(n, committed);
    if (entry.waiting.size > MAX_UNTIDY) entry.waiting.delete(entry.waiting.keys().next().value!);
    this.tidySoon(contentId, entry);
  }

  /** Starts the content's tidy now when a batch is full, else once TIDY_DELAY_MS have passed. */
  private tidySoon(contentId: string, entry: Untidy): void {
    if (entry.running || entry.waiting.size === 0) return;
    if (entry.waiting.size >= TIDY_BATCH) {
      clearTimeout(entry.timer);
      entry.timer = undefined;
      void this.runTidy(contentId, entry);
    } else if (!entry.timer) {
      entry.timer = setTimeout(() => {
        entry.timer = undefined;
        if (!entry.running) void this.runTidy(contentId, entry);
      }, TIDY_DELAY_MS);
      entry.timer.unref();
    }
  }

  private async runTidy(contentId: string, entry: Untidy): Promise<void> {
    entry.running = true;
    try {
      const batch = entry.waiting;
      entry.waiting = new Map();
      // A failure leaves garbage only: a later batch, or the content's forget, removes it.
      await this.tidy(contentId, batch).catch(() => undefined);
    } finally {
      entry.running = false;
    }
    if (this.untidy.get(contentId) !== entry) return;
    if (entry.waiting.size === 0) this.untidy.delete(contentId);
    else this.tidySoon(contentId, entry);
  }

  /**
   * Tidies after the versions of `batch`: the head moves to the last of them (top); of every part
   * they changed, the part documents older than the one version top-1 holds go, in one ranged
   * delete per part (their `_id`s sort by version); every version before top-1 becomes a stub.
   */
  private async tidy(contentId: string, batch: Map<number, Committed>): Promise<void> {
    const top = Math.max(...batch.keys());
    await this.setHead(contentId, top);
    const { partDocs, replaced } = batch.get(top)!;
    // What version top-1 held: top's documents, but for the ones top replaced.
    const heldBefore = new Map<number, string>();
    for (const id of [...Object.values(partDocs), ...replaced]) {
      const k = partOfDoc(contentId, id);
      if (k !== null && (!heldBefore.has(k) || replaced.includes(id))) heldBefore.set(k, id);
    }
    const changed = new Set<number>();
    for (const committed of batch.values()) {
      for (const id of committed.replaced) {
        changed.add(partOfDoc(contentId, id) ?? -1);
        this.recentParts.delete(id);
      }
    }
    const deletes: AnyBulkWriteOperation<StoredPartRanges>[] = [];
    for (const k of changed) {
      const keep = heldBefore.get(k);
      // A document of an older format does not sort by version: it goes with the content's forget.
      if (keep === undefined || !PADDED.test(keep.slice(UploadLedger.partId(contentId, k).length))) continue;
      deletes.push({ deleteMany: { filter: { _id: { $gte: partDocId(contentId, k, 0, ''), $lt: keep }, contentId } } });
    }
    if (deletes.length > 0) await this.partRanges.bulkWrite(deletes, { ordered: false });
    // Every version before top-1 may be a stub once top exists (whoever committed it).
    if (top >= 3) await this.stubRange(contentId, Math.max(1, Math.min(...batch.keys()) - 2), top - 2);
  }

  /** Drops the state of versions from..to (one update, whatever their number) and keeps their `_id`s taken. */
  private async stubRange(contentId: string, from: number, to: number): Promise<void> {
    if (to < from) return;
    await this.versions.updateMany({ _id: { $gte: versionId(contentId, from), $lte: versionId(contentId, to) }, contentId }, {
      $set: { stub: true },
      $unset: STUB_UNSET,
    } as UpdateFilter<StoredVersion>);
  }

  private async setHead(contentId: string, n: number): Promise<void> {
    try {
      await this.heads.updateOne({ _id: contentId, n: { $lt: n } }, { $set: { n } }, { upsert: true });
    } catch (error) {
      if (!isDuplicateKey(error)) throw error; // a head with a later n exists already
    }
  }
}

/** How many versions of one content may wait for their tidy (see scheduleTidy). */
const MAX_UNTIDY = 256;
/** A content's tidy starts once this many versions wait for it, or TIDY_DELAY_MS after the first. */
const TIDY_BATCH = 8;
const TIDY_DELAY_MS = 1_000;

/** The fields of a version that its stub drops (all but `_id`, `contentId`, `n` and `at`); typed so that none is forgotten. */
const STATE_FIELDS: Record<Exclude<keyof StateVersion, '_id' | 'contentId' | 'n' | 'at'>, true> = {
  total: true,
  lastByte: true,
  parts: true,
  completing: true,
  completingBy: true,
  covered: true,
  expiring: true,
  partDocs: true,
  replaced: true,
  gone: true,
};
const STUB_UNSET = Object.fromEntries(Object.keys(STATE_FIELDS).map((f) => [f, '']));

/** `_id` of the part document for part k written with version n: sorts by n among part k's. */
function partDocId(contentId: string, k: number, n: number, nonce: string): string {
  return `${UploadLedger.partId(contentId, k)}:${String(n).padStart(VERSION_DIGITS, '0')}.${nonce}`;
}
const PADDED = new RegExp(`^:\\d{${VERSION_DIGITS}}\\.`);

/** The part k a part document's `_id` names (null: not one of this content's). */
function partOfDoc(contentId: string, id: string): number | null {
  const m = /^:p(\d+)(:|$)/.exec(id.slice(contentId.length));
  return id.startsWith(contentId) && m ? Number(m[1]) : null;
}

/** What the tidy needs of a version committed here. */
interface Committed {
  /** The part documents it replaced. */
  replaced: string[];
  /** The part documents it holds, by part key. */
  partDocs: Record<string, string>;
}

interface Untidy {
  /** Version n → what it replaced and holds. */
  waiting: Map<number, Committed>;
  running: boolean;
  /** Set while a tidy waits for its batch to fill (see tidySoon). */
  timer?: NodeJS.Timeout;
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
