import { randomBytes } from 'node:crypto';
import { Crc64Nvme } from '@aws-sdk/crc64-nvme';
import { crc64nvme } from '#protocol';
import { checkRepr, combineCrc64, digestsOf, EMPTY_CRC64 } from '../src/digests';
import { IntegrityError } from '../src/errors';

async function crc(bytes: Buffer): Promise<Buffer> {
  const c = new Crc64Nvme();
  c.update(bytes);
  return Buffer.from(await c.digest());
}

describe('CRC-64/NVME', () => {
  it('is the CRC-64/NVME of the catalogue (check value of "123456789")', async () => {
    expect((await digestsOf([Buffer.from('123456789')])).crc64nvme.toString('hex')).toBe('ae8b14860a799888');
    expect((await digestsOf([])).crc64nvme).toEqual(EMPTY_CRC64);
  });

  it("gives what AWS's own implementation gives, piece by piece, and again with a hasher used before", async () => {
    for (const size of [0, 1, 7, 8, 4095, 1 << 20, (1 << 20) + 3]) {
      const bytes = randomBytes(size);
      const ours = await crc64nvme();
      for (let at = 0; at < size; at += 65_521) ours.update(bytes.subarray(at, at + 65_521));
      expect(ours.digest().toString('hex')).toBe((await crc(bytes)).toString('hex'));
      expect(() => ours.digest()).toThrow(/already taken/);
      expect(() => ours.update(bytes)).toThrow(/already taken/);
    }
    // Two at once, interleaved: each its own state.
    const [a, b] = [randomBytes(5000), randomBytes(3000)];
    const [ha, hb] = [await crc64nvme(), await crc64nvme()];
    ha.update(a.subarray(0, 100));
    hb.update(b);
    ha.update(a.subarray(100));
    expect([ha.digest(), hb.digest()]).toEqual([await crc(a), await crc(b)]);
  });

  it('combines the CRCs of parts into the CRC of the whole, whatever the lengths', async () => {
    for (const [a, b] of [
      [0, 0],
      [1, 0],
      [0, 7],
      [3, 5],
      [1000, 1],
      [65_537, 70_001],
    ] as const) {
      const first = randomBytes(a);
      const second = randomBytes(b);
      const combined = combineCrc64(await crc(first), await crc(second), b);
      expect(combined.toString('hex')).toBe((await crc(Buffer.concat([first, second]))).toString('hex'));
    }
  });

  it('combines many parts in byte order, as an upload whose parts were read in any order', async () => {
    const parts = Array.from({ length: 5 }, (_, i) => randomBytes(1000 + i * 333));
    let whole: Buffer = EMPTY_CRC64;
    for (const part of parts) whole = combineCrc64(whole, await crc(part), part.length);
    expect(whole).toEqual(await crc(Buffer.concat(parts)));
  });
});

describe('checkRepr', () => {
  const digests = { sha256: Buffer.alloc(32, 1), crc64nvme: Buffer.alloc(8, 2) };

  it('passes matching digests and those the service does not name', () => {
    expect(() =>
      checkRepr({ sha256: digests.sha256.toString('hex'), crc64nvme: digests.crc64nvme.toString('hex') }, digests, 'x'),
    ).not.toThrow();
    expect(() => checkRepr({ sha256: null, crc64nvme: null }, digests, 'x')).not.toThrow();
    expect(() => checkRepr({ sha256: null, crc64nvme: '00'.repeat(8) }, {}, 'x')).not.toThrow();
  });

  it('names the algorithm and both values when one differs', () => {
    expect(() => checkRepr({ sha256: null, crc64nvme: '00'.repeat(8) }, digests, 'the file sent')).toThrow(
      new IntegrityError(
        `CRC-64/NVME of the file sent is ${'02'.repeat(8)}; the service's Repr-Digest names ${'00'.repeat(8)}`,
      ),
    );
  });
});
