import { createHash, randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { PART_SIZE } from '@cp/protocol';
import { BodySlices, ChecksumCheck, ChecksumMismatch } from '../src/tus/bodySlices';
import { cutAtParts } from '../src/tus/TusDoor';
import { parseChecksum, parseConcat, parseMetadata, uploadLengthOf, uploadOffsetOf } from '../src/tus/tusHeaders';

const read = async (stream: Readable): Promise<Buffer> => {
  const chunks: Buffer[] = [];
  for await (const chunk of stream as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks);
};

/** A body arriving in chunks of the given sizes. */
const body = (data: Buffer, sizes: number[]): Readable => {
  const chunks: Buffer[] = [];
  let at = 0;
  for (const n of sizes) {
    chunks.push(data.subarray(at, at + n));
    at += n;
  }
  if (at < data.length) chunks.push(data.subarray(at));
  return Readable.from(chunks);
};

describe('the tus door, without servers', () => {
  it('cuts a PATCH at the 64 MiB part grid', () => {
    expect(cutAtParts(0, 10)).toEqual([[0, 10]]);
    expect(cutAtParts(10, 10)).toEqual([]);
    expect(cutAtParts(PART_SIZE - 5, PART_SIZE + 5)).toEqual([
      [PART_SIZE - 5, PART_SIZE],
      [PART_SIZE, PART_SIZE + 5],
    ]);
    expect(cutAtParts(0, 3 * PART_SIZE)).toEqual([
      [0, PART_SIZE],
      [PART_SIZE, 2 * PART_SIZE],
      [2 * PART_SIZE, 3 * PART_SIZE],
    ]);
  });

  it('slices a body into consecutive streams whatever its chunking, and ends a slice early with the body', async () => {
    const data = randomBytes(1000);
    const slices = new BodySlices(body(data, [1, 299, 7, 600]));
    expect((await read(slices.next(100))).equals(data.subarray(0, 100))).toBe(true);
    expect((await read(slices.next(500))).equals(data.subarray(100, 600))).toBe(true);
    const last = await read(slices.next(500));
    expect(last.equals(data.subarray(600))).toBe(true);
    expect(last.length).toBe(400);
  });

  it('passes a slice whose digest matches, and fails one that does not before its last chunk is read', async () => {
    const data = randomBytes(100_000);
    const sha1 = createHash('sha1').update(data).digest();
    const ok = new ChecksumCheck('sha1', sha1);
    expect((await read(ok.of(body(data, [40_000, 40_000])))).equals(data)).toBe(true);
    expect(ok.mismatch).toBe(false);

    const bad = new ChecksumCheck('sha1', createHash('sha1').update('other').digest());
    const seen: Buffer[] = [];
    const stream = bad.of(body(data, [40_000, 40_000]));
    await expect(
      (async () => {
        for await (const chunk of stream as AsyncIterable<Buffer>) seen.push(chunk);
      })(),
    ).rejects.toBeInstanceOf(ChecksumMismatch);
    expect(bad.mismatch).toBe(true);
    // The reader never got the whole body: the last chunk (20,000 bytes) was held back.
    expect(Buffer.concat(seen).length).toBe(80_000);
  });

  it('does nothing, and so cannot fail, before a reader reads', async () => {
    const bad = new ChecksumCheck('md5', Buffer.alloc(16));
    const stream = bad.of(Readable.from([Buffer.from('tiny')]));
    const errors: unknown[] = [];
    stream.on('error', (e) => errors.push(e));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(errors).toEqual([]);
    expect(bad.mismatch).toBe(false);
    stream.destroy();
  });

  it('reads Upload-Length and Upload-Offset as whole numbers only', () => {
    expect(uploadLengthOf(undefined)).toBeNull();
    expect(uploadLengthOf('0')).toBe(0);
    expect(uploadLengthOf(' 42 ')).toBe(42);
    for (const bad of ['-1', '01', '1.5', '1e3', 'abc', '', '12345678901234567', ['1', '2']])
      expect(() => uploadLengthOf(bad)).toThrow(expect.objectContaining({ code: 'invalidUploadLength' }));
    expect(uploadOffsetOf('7')).toBe(7);
    expect(() => uploadOffsetOf(undefined)).toThrow(expect.objectContaining({ code: 'invalidUploadOffset' }));
    expect(() => uploadOffsetOf('x')).toThrow(expect.objectContaining({ code: 'invalidUploadOffset' }));
  });

  it('reads Upload-Metadata pairs, keeps the header as sent, and refuses malformed or long ones', () => {
    const parsed = parseMetadata('filename cmVwb3J0LnBkZg==,is_confidential, filetype YXBwbGljYXRpb24vcGRm')!;
    expect(parsed.raw).toBe('filename cmVwb3J0LnBkZg==,is_confidential, filetype YXBwbGljYXRpb24vcGRm');
    expect(parsed.values.get('filename')!.toString()).toBe('report.pdf');
    expect(parsed.values.get('is_confidential')).toBeNull();
    expect(parsed.values.get('filetype')!.toString()).toBe('application/pdf');
    expect(parseMetadata(undefined)).toBeNull();
    for (const bad of ['a b c', 'a *', 'a YQ==,a YQ==', ',', `a ${'Q'.repeat(1100)}`, 'a é'])
      expect(() => parseMetadata(bad)).toThrow(expect.objectContaining({ code: 'invalidUploadMetadata' }));
  });

  it('reads Upload-Concat: partial, or final with up to the limit of distinct uploads of this owner', () => {
    const owner = '9f1c2a5e-4b8d-4d6f-a1e3-7c2b9d0e5f14';
    const [a, b] = ['5dcd7f18-797f-482c-b9c9-eed6d80246fd', '0c9bbcec-3fa2-41ca-a3f6-28b91007def6'];
    expect(parseConcat(undefined, owner, 16)).toBeNull();
    expect(parseConcat('partial', owner, 16)).toEqual({ kind: 'partial' });
    expect(
      parseConcat(`final;http://gw:8080/v1/${owner}/tus/${a} /v1/${owner}/tus/${b.toUpperCase()}`, owner, 16),
    ).toEqual({ kind: 'final', ids: [a, b] });
    for (const bad of [
      'whole',
      'final;',
      `final;/v1/${owner}/tus/${a} /v1/${owner}/tus/${a}`,
      `final;/v1/${owner.replace('9', '8')}/tus/${a}`,
      `final;/v1/${owner}/contents/${a}`,
      `final;/v1/${owner}/tus/${a} /v1/${owner}/tus/${b} /v1/${owner}/tus/${a.replace('5', '6')}`,
    ])
      expect(() => parseConcat(bad, owner, 2)).toThrow(expect.objectContaining({ code: 'invalidUploadConcat' }));
  });

  it('reads Upload-Checksum with the algorithms it offers only', () => {
    expect(parseChecksum('sha1 Kq5sNclPz7QV2+lfQIuc6R7oRu0=')).toEqual({
      algorithm: 'sha1',
      digest: Buffer.from('Kq5sNclPz7QV2+lfQIuc6R7oRu0=', 'base64'),
    });
    expect(parseChecksum(undefined)).toBeNull();
    for (const bad of ['crc32 AAAA', 'sha1', 'sha1 not base64!', 'SHA1 AAAA'])
      expect(() => parseChecksum(bad)).toThrow(expect.objectContaining({ code: 'invalidUploadChecksum' }));
  });
});
