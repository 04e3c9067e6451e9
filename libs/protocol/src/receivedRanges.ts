/** An inclusive byte range as `X-Received-Ranges` lists it. */
export interface ReceivedRange {
  start: number;
  end: number;
}

/** Writes `X-Received-Ranges`: `0-99,200-299`, inclusive, in order, each as given (the caller merges them). */
export function formatReceivedRanges(ranges: readonly ReceivedRange[]): string {
  return ranges.map((r) => `${r.start}-${r.end}`).join(',');
}

/** Reads `X-Received-Ranges` (`0-99,200-299`, inclusive, merged); an element of another form is an error. */
export function parseReceivedRanges(header: string | undefined): ReceivedRange[] {
  if (!header) return [];
  return header
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((s) => {
      const m = /^(\d+)-(\d+)$/.exec(s);
      if (!m) throw new Error(`unexpected X-Received-Ranges element ${JSON.stringify(s)}`);
      return { start: Number(m[1]), end: Number(m[2]) };
    });
}
