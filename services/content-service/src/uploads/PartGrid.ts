import { PART_SIZE } from '@cp/protocol';

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
