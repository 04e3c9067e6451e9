import { open } from 'node:fs/promises';

const SLICE = 1024 * 1024;

/**
 * Hands bytes [start, end) of a file to `take`, a slice at a time, read into one buffer that is
 * used again for every slice (a stream's fresh buffer per chunk left ~40 MiB of garbage per thread
 * while a GiB went by). `take` must be done with the slice when it returns.
 */
export async function eachSlice(
  path: string,
  start: number,
  end: number,
  take: (bytes: Buffer) => void,
): Promise<void> {
  const file = await open(path, 'r');
  try {
    const buffer = Buffer.allocUnsafe(SLICE);
    for (let at = start; at < end;) {
      const { bytesRead } = await file.read(buffer, 0, Math.min(SLICE, end - at), at);
      if (bytesRead === 0) throw new Error(`${path} ended at ${at}, before ${end}`);
      take(buffer.subarray(0, bytesRead));
      at += bytesRead;
    }
  } finally {
    await file.close();
  }
}
