import { createHash } from 'node:crypto';
import { HashingStream } from '../src/uploads/HashingStream';

describe('HashingStream', () => {
  const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

  it('has the digest once the expected bytes have passed, before the stream ends', () => {
    const hashing = new HashingStream(6);
    hashing.write(Buffer.from('abc'));
    expect(() => hashing.digest).toThrow('not ended');
    hashing.write(Buffer.from('def'));
    hashing.read(); // consumed downstream; the writable side is still open (no end yet)
    expect(hashing.writableEnded).toBe(false);
    expect(hashing.digest).toBe(sha(Buffer.from('abcdef')));
  });

  it('fails on a byte past the expected ones', async () => {
    const hashing = new HashingStream(2);
    const failed = new Promise((resolve) => hashing.on('error', resolve));
    hashing.write(Buffer.from('ab'));
    hashing.write(Buffer.from('c'));
    hashing.resume();
    expect(String(await failed)).toMatch(/more than the 2 bytes/);
  });

  it('without an expected length, has the digest at the end', async () => {
    const hashing = new HashingStream();
    hashing.resume();
    const ended = new Promise((resolve) => hashing.on('end', resolve));
    hashing.end(Buffer.from('xyz'));
    await ended;
    expect(hashing.digest).toBe(sha(Buffer.from('xyz')));
  });
});
