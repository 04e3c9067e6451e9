import { RangeSyntaxError } from './RangeSyntaxError';

/**
 * A download's Range header. `legacy` is the API's own form `bytes a-b/total` (answered 200);
 * its `total` (null for `*`) must be the content's. The RFC 9110 forms (`bytes=a-b`, `bytes=a-`, `bytes=-n`) are answered 206.
 */
export type RangeRequest =
  | { form: 'legacy'; first: number; last: number; total: number | null }
  | { form: 'rfc'; first: number; last: number | null }
  | { form: 'rfc-suffix'; length: number };

export type ResolvedRange = { satisfiable: true; start: number; end: number } | { satisfiable: false };

const LEGACY = /^bytes ([0-9]{1,20})-([0-9]{1,20})\/([0-9]{1,20}|\*)$/i;
// Any number of digits (RFC 9110 sets no bound; leading zeros are allowed): a position past any
// content (however many digits, up to Infinity) clips as an end and is unsatisfiable as a start.
const RFC = /^bytes=([0-9]*)-([0-9]*)$/i;

export function parseRange(header: string): RangeRequest {
  const value = header.trim();
  const legacy = LEGACY.exec(value);
  if (legacy) {
    const first = Number(legacy[1]);
    const last = Number(legacy[2]);
    if (first > last) throw new RangeSyntaxError(`Range start ${first} is after its end ${last}`);
    return { form: 'legacy', first, last, total: legacy[3] === '*' ? null : Number(legacy[3]) };
  }
  if (value.includes(',')) throw new RangeSyntaxError('multiple ranges in one request are not supported');
  const rfc = RFC.exec(value);
  if (!rfc || (rfc[1] === '' && rfc[2] === '')) {
    throw new RangeSyntaxError(
      `Range ${JSON.stringify(header)} is not "bytes=a-b", "bytes=a-", "bytes=-n" or "bytes a-b/total"`,
    );
  }
  if (rfc[1] === '') return { form: 'rfc-suffix', length: Number(rfc[2]) };
  const first = Number(rfc[1]);
  const last = rfc[2] === '' ? null : Number(rfc[2]);
  if (last !== null && first > last) throw new RangeSyntaxError(`Range start ${first} is after its end ${last}`);
  return { form: 'rfc', first, last };
}

/** Whether a Range header is in S3's own spelling (`bytes=` in lower case, no spaces): S3 ignores a range written otherwise. */
export function inS3Spelling(header: string): boolean {
  return /^bytes=[0-9]*-[0-9]*$/.test(header.trim());
}

/** Applies a parsed range to a content of `total` bytes: ends past the content are clipped. */
export function resolveRange(range: RangeRequest, total: number): ResolvedRange {
  if (range.form === 'rfc-suffix') {
    if (range.length === 0 || total === 0) return { satisfiable: false };
    return { satisfiable: true, start: Math.max(0, total - range.length), end: total - 1 };
  }
  if (range.first >= total) return { satisfiable: false };
  const last = range.last === null ? total - 1 : Math.min(range.last, total - 1);
  return { satisfiable: true, start: range.first, end: last };
}

/** Writes the Range of bytes `first` to `last` (inclusive) in the RFC 9110 form: `bytes=first-last`. */
export function formatRange(first: number, last: number): string {
  return `bytes=${first}-${last}`;
}
