import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { digestsOf } from '../src/digests';

/**
 * fileDigests as built (its CRC worker is a compiled script beside it): the same SHA-256 and
 * CRC-64/NVME as one pass over the file, for sizes around its split and its threshold.
 */
const built = join(__dirname, '..', 'dist', 'fileDigests.js');

describe('fileDigests', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-file-digests-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('is built with its worker script (the test suite runs after the build)', () => {
    expect(existsSync(built)).toBe(true);
    expect(existsSync(join(__dirname, '..', 'dist', 'crcWorker.js'))).toBe(true);
  });

  it.each([0, 1, 1024 * 1024, 16 * 1024 * 1024, 16 * 1024 * 1024 + 1, 40 * 1024 * 1024 + 7])(
    'gives one pass’s digests for a file of %i bytes',
    async (size) => {
      const { fileDigests } = (await import(built)) as typeof import('../src/fileDigests');
      const bytes = randomBytes(size);
      const path = join(dir, `f${size}`);
      writeFileSync(path, bytes);
      const expected = await digestsOf([bytes]);
      const got = await fileDigests(path, size);
      expect(got.sha256.toString('hex')).toBe(expected.sha256.toString('hex'));
      expect(got.crc64nvme.toString('hex')).toBe(expected.crc64nvme.toString('hex'));
    },
  );
});
