import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { digestsOf } from '../src/digests';

/**
 * FileDigests as built (its worker is a compiled script beside it): the same SHA-256 and
 * CRC-64/NVME as one pass over the bytes, whether the file is written in order, out of order
 * with the worker told as the written prefix grows, or not told before the end.
 */
const built = join(__dirname, '..', 'dist', 'fileDigests.js');
const MiB = 1024 * 1024;

describe('FileDigests', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-file-digests-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const load = async () => ((await import(built)) as typeof import('../src/fileDigests')).FileDigests;

  it('is built with its worker script (the test suite runs after the build)', () => {
    expect(existsSync(built)).toBe(true);
    expect(existsSync(join(__dirname, '..', 'dist', 'digestWorker.js'))).toBe(true);
  });

  it.each([0, 1, MiB, 16 * MiB, 16 * MiB + 1, 40 * MiB + 7])(
    'gives one pass’s digests for a file of %i bytes written out of order',
    async (size) => {
      const FileDigests = await load();
      const bytes = randomBytes(size);
      const path = join(dir, `f${size}`);
      const file = await open(path, 'w');
      await file.truncate(size);
      const hashing = new FileDigests(path, size);
      // Chunks of 3 MiB written last to first but one: the prefix grows only at the end.
      const chunk = 3 * MiB;
      const starts = Array.from({ length: Math.ceil(size / chunk) }, (_, i) => i * chunk).reverse();
      for (const start of starts) {
        await file.write(bytes, start, Math.min(chunk, size - start), start);
        hashing.written(start === 0 ? Math.min(chunk, size) : 0);
      }
      await file.close();
      const expected = await digestsOf([bytes]);
      const got = await hashing.digests();
      expect(got.sha256.toString('hex')).toBe(expected.sha256.toString('hex'));
      expect(got.crc64nvme.toString('hex')).toBe(expected.crc64nvme.toString('hex'));
    },
  );

  it('follows a prefix that grows while it reads, and ignores a prefix that shrinks', async () => {
    const FileDigests = await load();
    const size = 24 * MiB + 5;
    const bytes = randomBytes(size);
    const path = join(dir, 'growing');
    const file = await open(path, 'w');
    await file.truncate(size);
    const hashing = new FileDigests(path, size);
    for (let at = 0; at < size; at += 2 * MiB) {
      await file.write(bytes, at, Math.min(2 * MiB, size - at), at);
      hashing.written(at + 2 * MiB);
      hashing.written(at);
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    await file.close();
    expect((await hashing.digests()).sha256).toEqual((await digestsOf([bytes])).sha256);
  });

  it('stops its worker when the download fails', async () => {
    const FileDigests = await load();
    const path = join(dir, 'abandoned');
    const file = await open(path, 'w');
    await file.truncate(32 * MiB);
    await file.close();
    const hashing = new FileDigests(path, 32 * MiB);
    hashing.written(MiB);
    await hashing.close();
    await expect(hashing.digests()).rejects.toThrow(/exited/);
  });
});
