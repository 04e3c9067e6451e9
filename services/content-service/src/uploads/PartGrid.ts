// Where an upload's bytes lie: the 64 MiB part grid, byte ranges and their arithmetic, and the S3
// key of each content, part and staged piece.
import { PART_SIZE } from '@cp/protocol';

/** Where a content's bytes live in S3: the finished object, and its staged pieces while it uploads. */

/** The S3 key of a content's object (the multipart upload's, or the one PutObject's). */
export function contentKey(ownerId: string, id: string): string {
  return `contents/${ownerId}/${id}`;
}

/** The folder of a content's staged pieces: deleted as a whole at completion or expiry. */
export function stagingPrefix(contentId: string): string {
  return `staging/${contentId}/`;
}

/** The folders every content's keys lie in, kept by the service (ObjectStore.keepFolders). */
export const KEPT_FOLDERS = ['contents/', 'staging/'] as const;

/** The S3 key of a staged piece. */
export function stagedKey(contentId: string, a: number, b: number, nonce: string): string {
  return `${stagingPrefix(contentId)}${a}-${b}.${nonce}`;
}

/** An inclusive byte range [a, b]. */
export interface ByteRange {
  a: number;
  b: number;
}

/**
 * How a new range relates to the ranges already received: `new` touches none of them, `retry`
 * is exactly one of them, `overlap` partly covers received bytes (a conflict).
 */
export function classifyRange(range: ByteRange, received: readonly ByteRange[]): 'new' | 'retry' | 'overlap' {
  let identical = false;
  for (const r of received) {
    if (r.b < range.a || r.a > range.b) continue;
    if (r.a === range.a && r.b === range.b) identical = true;
    else return 'overlap';
  }
  return identical ? 'retry' : 'new';
}

/** Sorts and joins touching or overlapping ranges. */
export function mergeRanges(ranges: readonly ByteRange[]): ByteRange[] {
  const sorted = [...ranges].sort((x, y) => x.a - y.a);
  const out: ByteRange[] = [];
  for (const r of sorted) {
    const last = out[out.length - 1];
    if (last && r.a <= last.b + 1) last.b = Math.max(last.b, r.b);
    else out.push({ a: r.a, b: r.b });
  }
  return out;
}

/** Whether the ranges together cover every byte of [a, b]. */
export function covers(ranges: readonly ByteRange[], target: ByteRange): boolean {
  return mergeRanges(ranges).some((r) => r.a <= target.a && r.b >= target.b);
}

/**
 * The fixed grid that maps content bytes onto S3 multipart parts: part k (1-based) covers bytes
 * [(k-1)·P, min(k·P, total) - 1].
 */
export const PartGrid = {
  /** How many S3 parts a content of `total` bytes has. */
  partCount(total: number): number {
    return Math.ceil(total / PART_SIZE);
  },

  partNumberAt(offset: number): number {
    return Math.floor(offset / PART_SIZE) + 1;
  },

  /** Inclusive byte range of part k, when the total is known or k is not the last part. */
  partRange(k: number, total: number | null): { start: number; end: number } {
    const start = (k - 1) * PART_SIZE;
    const fullEnd = k * PART_SIZE - 1;
    return { start, end: total === null ? fullEnd : Math.min(fullEnd, total - 1) };
  },

  /**
   * A range that is exactly one grid part: it starts on a part boundary and is either a whole
   * part or the final one. Such a range goes straight into UploadPart.
   */
  alignedPartNumber(start: number, end: number, total: number | null): number | null {
    if (start % PART_SIZE !== 0) return null;
    const length = end - start + 1;
    if (length === PART_SIZE) return start / PART_SIZE + 1;
    if (total !== null && end === total - 1 && length < PART_SIZE) return start / PART_SIZE + 1;
    return null;
  },
};

/** The key of part k in `UploadState.parts` (store/UploadBook.ts) and of its field in the book: `p<k>`. */
export function partKey(k: number): string {
  return `p${k}`;
}
