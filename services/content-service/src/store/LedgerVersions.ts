import { emptyUploadState, type UploadState } from './UploadState';

/** One version of a content's bookkeeping, as stored: inserted once under `_id` `<contentId>:<n>`, never changed but into a stub. */
export interface StateVersion extends Omit<UploadState, '_id' | 'version'> {
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
export interface StubVersion {
  _id: string;
  contentId: string;
  n: number;
  stub: true;
  at: Date;
}

export type StoredVersion = StateVersion | StubVersion;

export const isStub = (v: StoredVersion): v is StubVersion => 'stub' in v && v.stub === true;

/** Where a content's latest version was last seen (a hint: it may lag, never lead). */
export interface Head {
  _id: string;
  n: number;
}

export const VERSION_DIGITS = 10;
export const versionId = (contentId: string, n: number) => `${contentId}:${String(n).padStart(VERSION_DIGITS, '0')}`;
/** How many contents' latest versions and how many part documents a process keeps in memory. */
export const RECENT_VERSIONS = 1000;
export const RECENT_PARTS = 256;
/** A remembered version older than this is looked up again from the head hint. */
export const RECENT_MAX_AGE_MS = 10 * 60_000;

/** Keeps `value` under `key` as the newest entry, dropping the oldest beyond `limit`. */
export function remember<V>(cache: Map<string, V>, key: string, value: V, limit: number): void {
  cache.delete(key);
  cache.set(key, value);
  if (cache.size > limit) cache.delete(cache.keys().next().value!);
}

/** A state of its own (the version may be a remembered one that must not change). */
export function toState(remembered: StateVersion): UploadState {
  const v = structuredClone(remembered);
  if (v.gone) return { ...emptyUploadState(v.contentId), version: v.n, partDocs: {} };
  const { _id: _ignored, contentId, n, replaced: _r, gone: _g, at: _a, ...fields } = v;
  return { ...fields, _id: contentId, version: n };
}
