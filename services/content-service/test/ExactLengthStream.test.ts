import { createHash } from 'node:crypto';
import { crc64nvme } from '@cp/protocol';
import { BodyLengthMismatch, DigestMismatch, ExactLengthStream } from '../src/uploads/ExactLengthStream';

describe('ExactLengthStream', () => {
  const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

  it('with hash, has the digest once the expected bytes have passed, before the stream ends', () => {
    const stream = new ExactLengthStream(6, { hash: true });
    stream.write(Buffer.from('abc'));
    expect(() => stream.digest).toThrow('not ended');
    stream.write(Buffer.from('def'));
    expect(stream.read()).toEqual(Buffer.from('abcdef')); // consumed downstream; the writable side is still open
    expect(stream.writableEnded).toBe(false);
    expect(stream.digest).toBe(sha(Buffer.from('abcdef')));
  });

  it('with sha256, passes on a body of that digest and withholds the last chunk of any other', async () => {
    const digest = createHash('sha256').update('abcdef').digest();
    const good = new ExactLengthStream(6, { sha256: digest });
    const passed: Buffer[] = [];
    good.on('data', (c: Buffer) => passed.push(c));
    const ended = new Promise((resolve) => good.on('end', resolve));
    good.write(Buffer.from('abc'));
    good.end(Buffer.from('def'));
    await ended;
    expect(Buffer.concat(passed).toString()).toBe('abcdef');

    const bad = new ExactLengthStream(6, { sha256: digest });
    const got: Buffer[] = [];
    bad.on('data', (c: Buffer) => got.push(c));
    const failed = new Promise((resolve) => bad.on('error', resolve));
    bad.write(Buffer.from('abc'));
    bad.write(Buffer.from('deF'));
    expect(await failed).toBeInstanceOf(DigestMismatch);
    expect(Buffer.concat(got).toString()).toBe('abc'); // the reader never had all of it

    const empty = new ExactLengthStream(0, { sha256: digest });
    const refused = new Promise((resolve) => empty.on('error', resolve));
    empty.resume();
    empty.end();
    expect(await refused).toBeInstanceOf(DigestMismatch);
  });

  it('fails on a byte past the expected ones', async () => {
    const stream = new ExactLengthStream(2, { hash: true });
    const failed = new Promise((resolve) => stream.on('error', resolve));
    stream.write(Buffer.from('ab'));
    stream.write(Buffer.from('c'));
    stream.resume();
    const error = await failed;
    expect(error).toBeInstanceOf(BodyLengthMismatch);
    expect(error).toMatchObject({ expected: 2, received: 3, overflow: true });
  });

  it('fails a body that ends short, unless atMost; atMost hashes what came', async () => {
    const short = new ExactLengthStream(5);
    const failed = new Promise((resolve) => short.on('error', resolve));
    short.resume();
    short.end(Buffer.from('abc'));
    expect(await failed).toMatchObject({ expected: 5, received: 3, overflow: false });

    const atMost = new ExactLengthStream(5, { atMost: true, hash: true });
    atMost.resume();
    const ended = new Promise((resolve) => atMost.on('end', resolve));
    atMost.end(Buffer.from('xyz'));
    await ended;
    expect(atMost.bytesSeen).toBe(3);
    expect(atMost.digest).toBe(sha(Buffer.from('xyz')));
  });

  it('keeps no digest unless asked', () => {
    const stream = new ExactLengthStream(1);
    stream.write(Buffer.from('a'));
    expect(() => stream.digest).toThrow('no digest');
  });

  it('with crc64nvme and atMost, fails at the end a body of another CRC, never ending it', async () => {
    const crcOf = async (text: string) => {
      const crc = await crc64nvme();
      crc.update(Buffer.from(text));
      return crc.digest();
    };
    const run = async (text: string) => {
      const stream = new ExactLengthStream(100, {
        atMost: true,
        crc64nvme: { hasher: await crc64nvme(), expected: await crcOf('abcdef') },
      });
      stream.resume();
      const outcome = new Promise((resolve) => {
        stream.on('end', () => resolve('ended'));
        stream.on('error', (error) => resolve(error));
      });
      stream.end(Buffer.from(text));
      return outcome;
    };
    expect(await run('abcdef')).toBe('ended');
    const failed = await run('abcdeg');
    expect(failed).toBeInstanceOf(DigestMismatch);
    expect((failed as Error).message).toContain('crc64nvme');
  });
});
