import { RangeSyntaxError } from './RangeSyntaxError';

/** The byte range an upload request carries; ends are inclusive, total null when sent as `*`. */
export interface ContentRange {
  start: number;
  end: number;
  total: number | null;
}

// `bytes a-b/total`, `bytes a-b/*`, and the tolerated `bytes=a-b/total`.
const CONTENT_RANGE = /^bytes[ =]([0-9]{1,20})-([0-9]{1,20})\/([0-9]{1,20}|\*)$/i;

/**
 * Parses an upload's Content-Range. Checks the syntax and the order of the numbers only
 * (a ≤ b, b < total); limits such as the part size are the caller's.
 */
export function parseContentRange(header: string): ContentRange {
  const m = CONTENT_RANGE.exec(header.trim());
  if (!m)
    throw new RangeSyntaxError(`Content-Range ${JSON.stringify(header)} is not "bytes a-b/total" or "bytes a-b/*"`);
  const start = Number(m[1]);
  const end = Number(m[2]);
  const total = m[3] === '*' ? null : Number(m[3]);
  if (start > end) throw new RangeSyntaxError(`Content-Range start ${start} is after its end ${end}`);
  if (total !== null && end >= total) {
    throw new RangeSyntaxError(`Content-Range end ${end} is not below the total ${total}`);
  }
  return { start, end, total };
}

/**
 * Writes a Content-Range: `bytes a-b/total`, or `bytes a-b/*` while the total is not known; with
 * no range (null), the unsatisfied form that names the total alone (`bytes`, an asterisk, `/total`).
 */
export function formatContentRange(range: { start: number; end: number } | null, total: number | null): string {
  const length = total === null ? '*' : String(total);
  return range === null ? `bytes */${length}` : `bytes ${range.start}-${range.end}/${length}`;
}
