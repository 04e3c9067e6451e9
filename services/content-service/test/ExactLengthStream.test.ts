import { createHash } from 'node:crypto';
import { BodyLengthMismatch, ExactLengthStream } from '../src/uploads/ExactLengthStream';

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
