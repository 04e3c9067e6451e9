import {
  emptyPart,
  emptyUploadState,
  OwnedLimitReached,
  StaleBookRead,
  type PartRanges,
  type Piece,
  type UploadBook,
  type UploadRecord,
  type UploadState,
} from '../../src/store/UploadBook';
import type { BookView } from '../../src/uploads/BookCommits';

/** The upload book in memory, for unit tests of the rules that read and change it (held to the same contract as RedisUploadBook). */
export class MemoryUploadBook implements UploadBook {
  private readonly uploads = new Map<
    string,
    { record: UploadRecord; state: UploadState; parts: Map<number, PartRanges> }
  >();
  private readonly cleanups = new Map<string, number>();

  async create(record: UploadRecord, maxOwned?: number): Promise<void> {
    if (this.uploads.has(record._id)) throw new Error(`upload ${record._id} exists already`);
    // Counted and set without a yield between: atomic, as the Redis book's script.
    const held = [...this.uploads.values()].filter((e) => e.record.ownerId === record.ownerId).length;
    if (maxOwned !== undefined && held >= maxOwned) throw new OwnedLimitReached(maxOwned, held);
    this.uploads.set(record._id, {
      record: structuredClone(record),
      state: emptyUploadState(record._id, 1),
      parts: new Map(),
    });
  }

  async find(id: string): Promise<UploadRecord | null> {
    const entry = this.uploads.get(id);
    if (!entry) return null;
    return { ...structuredClone(entry.record), uploadId: entry.state.uploadId ?? entry.record.uploadId };
  }

  async state(id: string): Promise<UploadState> {
    const entry = this.uploads.get(id);
    return entry ? structuredClone(entry.state) : emptyUploadState(id);
  }

  async part(id: string, k: number, version?: number): Promise<PartRanges> {
    const entry = this.uploads.get(id);
    if (version !== undefined && (entry?.state.version ?? 0) !== version)
      throw new StaleBookRead(`upload ${id} moved past version ${version}`);
    return structuredClone(entry?.parts.get(k) ?? emptyPart(id, k));
  }

  async commit(state: UploadState, parts: PartRanges[]): Promise<boolean> {
    const entry = this.uploads.get(state._id);
    if (!entry || entry.state.version !== state.version) return false;
    entry.state = { ...structuredClone(state), version: state.version + 1 };
    for (const part of parts) entry.parts.set(part.k, structuredClone(part));
    return true;
  }

  async extend(id: string, expiresAt: Date): Promise<void> {
    const entry = this.uploads.get(id);
    if (entry && expiresAt > entry.record.expiresAt) entry.record.expiresAt = expiresAt;
  }

  async expired(now: Date, limit: number): Promise<string[]> {
    return [...this.uploads.values()]
      .filter((e) => e.record.expiresAt < now)
      .sort((x, y) => x.record.expiresAt.getTime() - y.record.expiresAt.getTime())
      .slice(0, limit)
      .map((e) => e.record._id);
  }

  async ownedUploads(ownerId: string, after: string | null, limit: number): Promise<string[]> {
    return [...this.uploads.values()]
      .map((e) => e.record)
      .filter((r) => r.ownerId === ownerId && (after === null || r._id > after))
      .map((r) => r._id)
      .sort()
      .slice(0, limit);
  }

  async ownedCount(ownerId: string): Promise<number> {
    return [...this.uploads.values()].filter((e) => e.record.ownerId === ownerId).length;
  }

  async remove(id: string): Promise<void> {
    this.uploads.delete(id);
  }

  async noteCleanup(id: string, now: Date): Promise<void> {
    if (!this.cleanups.has(id)) this.cleanups.set(id, now.getTime());
  }

  async pendingCleanups(limit: number): Promise<string[]> {
    return [...this.cleanups.entries()]
      .sort((x, y) => x[1] - y[1])
      .slice(0, limit)
      .map(([id]) => id);
  }

  async cleanupDone(id: string): Promise<void> {
    this.cleanups.delete(id);
  }
}

/**
 * A view of an upload's bookkeeping held in plain objects, for unit tests of the rules that read
 * and change it (what a change gets from BookCommits, without a book).
 */
export class InMemoryBookView {
  readonly states = new Map<string, UploadState>();
  readonly parts = new Map<string, PartRanges>();

  state(contentId: string): UploadState {
    let state = this.states.get(contentId);
    if (!state) this.states.set(contentId, (state = emptyUploadState(contentId, 1)));
    return state;
  }

  part(contentId: string, k: number): PartRanges {
    const id = `${contentId}:p${k}`;
    let part = this.parts.get(id);
    if (!part) this.parts.set(id, (part = emptyPart(contentId, k)));
    return part;
  }

  view(contentId: string): BookView {
    return { state: this.state(contentId), part: async (k) => this.part(contentId, k) };
  }
}

export function staged(a: number, b: number): Piece {
  return { a, b, kind: 'staged', key: `staging/x/${a}-${b}.n`, sha256: null };
}

export function direct(a: number, b: number): Piece {
  return { a, b, kind: 'part', key: null, sha256: null };
}
