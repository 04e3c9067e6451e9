// A worker thread of FileDigests: the SHA-256 and CRC-64/NVME of a file of `total` bytes, read in
// order as far as the parent says the bytes are written (a number posted: bytes [0, n) are final),
// posted back as { sha256, crc64nvme } once all `total` bytes are taken.
import { createHash } from 'node:crypto';
import { open } from 'node:fs/promises';
import { parentPort, workerData } from 'node:worker_threads';
import { crc64nvme } from '#protocol';

const SLICE = 1024 * 1024;
const { path, total } = workerData as { path: string; total: number };

let written = 0;
let wake: (() => void) | null = null;
parentPort!.on('message', (upTo: number) => {
  written = Math.max(written, Math.min(upTo, total));
  wake?.();
});

async function follow(): Promise<void> {
  const hash = createHash('sha256');
  const crc = await crc64nvme();
  const file = await open(path, 'r');
  try {
    // One buffer for every slice: a fresh one per read left tens of MiB of garbage per GiB.
    const buffer = Buffer.allocUnsafe(SLICE);
    for (let at = 0; at < total;) {
      if (at === written) {
        await new Promise<void>((resolve) => (wake = resolve));
        wake = null;
        continue;
      }
      const { bytesRead } = await file.read(buffer, 0, Math.min(SLICE, written - at), at);
      if (bytesRead === 0) throw new Error(`${path} ended at ${at}, before ${written}`);
      const bytes = buffer.subarray(0, bytesRead);
      hash.update(bytes);
      crc.update(bytes);
      at += bytesRead;
    }
  } finally {
    await file.close();
  }
  parentPort!.postMessage({ sha256: hash.digest(), crc64nvme: crc.digest() });
  parentPort!.close();
}

follow().catch((error: unknown) => {
  throw error;
});
