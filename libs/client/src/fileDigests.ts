import { createReadStream, existsSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { digestsOf, type BodyDigests } from './digests';

/** Below this a file is digested in one pass on this thread once written (a worker costs more than it saves). */
const WORKER_FROM = 16 * 1024 * 1024;
const WORKER = join(__dirname, 'digestWorker.js');

/**
 * A downloading file's SHA-256 and CRC-64/NVME, taken in a worker thread that reads the file in
 * order as far as its bytes are written (`written`), while later ranges still arrive: by the last
 * range, only the bytes behind the last few are left to hash. A 1 GiB direct download had spent
 * 1.1–1.2 s hashing after its last byte. Files under 16 MiB, or where the worker's script is not
 * there (the library run from its TypeScript sources), are read in one pass at the end.
 */
export class FileDigests {
  private readonly worker: Worker | null;
  private readonly answer: Promise<BodyDigests> | null = null;

  constructor(
    private readonly path: string,
    private readonly total: number,
  ) {
    this.worker =
      total >= WORKER_FROM && existsSync(WORKER) ? new Worker(WORKER, { workerData: { path, total } }) : null;
    const worker = this.worker;
    if (worker === null) return;
    this.answer = new Promise((resolve, reject) => {
      worker.once('message', (d: { sha256: Uint8Array; crc64nvme: Uint8Array }) =>
        resolve({ sha256: Buffer.from(d.sha256), crc64nvme: Buffer.from(d.crc64nvme) }),
      );
      worker.once('error', reject);
      worker.once('exit', (code) => reject(new Error(`the digest worker exited with ${code} before answering`)));
    });
    // Until asked for, a failure is kept for the one who asks (no unhandled rejection meanwhile).
    this.answer.catch(() => undefined);
  }

  /** Bytes [0, upTo) of the file are written for good. */
  written(upTo: number): void {
    this.worker?.postMessage(upTo);
  }

  /** The whole file's digests, once all its bytes are written. */
  async digests(): Promise<BodyDigests> {
    if (this.answer === null) return digestsOf(createReadStream(this.path, { highWaterMark: 1024 * 1024 }));
    this.written(this.total);
    return this.answer;
  }

  /** Stops the worker (a download that failed: its file is not read further). */
  async close(): Promise<void> {
    await this.worker?.terminate();
  }
}
