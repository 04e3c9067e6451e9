import { createHash } from 'node:crypto';
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
});
