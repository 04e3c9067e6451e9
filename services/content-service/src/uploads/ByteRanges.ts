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
