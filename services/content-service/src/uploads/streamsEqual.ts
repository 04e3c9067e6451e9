import type { Readable } from 'node:stream';

/**
 * Compares two byte streams of the same expected length chunk by chunk, holding at most one
 * chunk of each in memory. Both streams are read to the end (or destroyed on a difference).
 */
export async function streamsEqual(a: Readable, b: Readable): Promise<boolean> {
  const left = a[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  const right = b[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  let l: Buffer = Buffer.alloc(0);
  let r: Buffer = Buffer.alloc(0);
  let leftDone = false;
  let rightDone = false;
  try {
    for (;;) {
      if (l.length === 0 && !leftDone) {
        const next = await left.next();
        if (next.done) leftDone = true;
        else l = next.value;
      }
      if (r.length === 0 && !rightDone) {
        const next = await right.next();
        if (next.done) rightDone = true;
        else r = next.value;
      }
      if (l.length === 0 && r.length === 0 && leftDone && rightDone) return true;
      if ((l.length === 0 && leftDone) || (r.length === 0 && rightDone)) return false;
      const n = Math.min(l.length, r.length);
      if (!l.subarray(0, n).equals(r.subarray(0, n))) return false;
      l = l.subarray(n);
      r = r.subarray(n);
    }
  } finally {
    if (!leftDone) a.destroy();
    if (!rightDone) b.destroy();
  }
}
