/** An inclusive byte range. */
export interface ByteRange {
  start: number;
  end: number;
}

/** Reads `X-Received-Ranges` (`0-99,200-299`, inclusive, merged). */
export function parseReceivedRanges(header: string | undefined): ByteRange[] {
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

/** The parts of a `total`-byte file split every `partSize` bytes. */
export function splitIntoParts(total: number, partSize: number): ByteRange[] {
  const parts: ByteRange[] = [];
  for (let start = 0; start < total; start += partSize)
    parts.push({ start, end: Math.min(start + partSize, total) - 1 });
  return parts;
}

/** The parts not wholly inside one of the received ranges. */
export function missingParts(parts: ByteRange[], received: ByteRange[]): ByteRange[] {
  return parts.filter((p) => !received.some((r) => r.start <= p.start && r.end >= p.end));
}
