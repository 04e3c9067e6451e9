// Byte-range arithmetic of the soak's uploads.
const PART = 64 * 1024 * 1024;

/** "0-9,20-29" (X-Received-Ranges) → [[0, 9], [20, 29]]. */
function parseRanges(text) {
  if (!text) return [];
  return text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((s) => s.split('-').map(Number));
}

/** The intervals of [0, size) not in `received`, each cut at 64 MiB boundaries (a valid range of its own). */
function missingPieces(received, size) {
  const sorted = [...received].sort((a, b) => a[0] - b[0]);
  const gaps = [];
  let at = 0;
  for (const [a, b] of sorted) {
    if (a > at) gaps.push([at, Math.min(a, size) - 1]);
    at = Math.max(at, b + 1);
  }
  if (at < size) gaps.push([at, size - 1]);
  const pieces = [];
  for (const [a, b] of gaps) {
    for (let s = a; s <= b;) {
      const e = Math.min(b, (Math.floor(s / PART) + 1) * PART - 1);
      pieces.push([s, e]);
      s = e + 1;
    }
  }
  return pieces;
}

module.exports = { PART, parseRanges, missingPieces };
