export { parseReceivedRanges } from '#protocol/receivedRanges';

/** An inclusive byte range. */
export interface ByteRange {
  start: number;
  end: number;
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
