import { createHash } from 'node:crypto';
import { Transform, type TransformCallback } from 'node:stream';

/**
 * Passes bytes through and keeps their SHA-256. With `expected`, the digest is ready as soon as
 * that many bytes have passed, before the stream ends: S3 answers a PutObject once it has its
 * Content-Length of bytes, which can be before the request body's end (a chunked body's last,
 * empty chunk) reaches this stream. A byte past `expected` fails the stream.
 */
export class HashingStream extends Transform {
  private readonly hash = createHash('sha256');
  private hex: string | null = null;
  private seen = 0;

  constructor(private readonly expected?: number) {
    super();
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, callback: TransformCallback): void {
    if (this.hex !== null) {
      callback(new Error(`more than the ${this.expected} bytes expected`));
      return;
    }
    this.hash.update(chunk);
    this.seen += chunk.length;
    if (this.seen === this.expected) this.hex = this.hash.digest('hex');
    callback(null, chunk);
  }

  override _flush(callback: TransformCallback): void {
    this.hex ??= this.hash.digest('hex');
    callback();
  }

  get digest(): string {
    if (this.hex === null) throw new Error('the stream has not ended yet');
    return this.hex;
  }
}
