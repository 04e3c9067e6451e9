// A worker thread of fileDigests: the CRC-64/NVME of bytes [start, end) of a file, posted back.
import { parentPort, workerData } from 'node:worker_threads';
import { crc64nvme } from '#protocol';
import { eachSlice } from './fileSlices';

const { path, start, end } = workerData as { path: string; start: number; end: number };

async function crcOf(): Promise<Buffer> {
  const crc = await crc64nvme();
  await eachSlice(path, start, end, (bytes) => crc.update(bytes));
  return crc.digest();
}

crcOf().then(
  (crc) => parentPort!.postMessage(crc),
  (error: unknown) => {
    throw error;
  },
);
