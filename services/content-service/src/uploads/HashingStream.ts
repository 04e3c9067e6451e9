import { createHash } from 'node:crypto';
import { Transform, type TransformCallback } from 'node:stream';

/** Passes bytes through and keeps their SHA-256, read once the stream has ended. */
export class HashingStream extends Transform {
  private readonly hash = createHash('sha256');
  private hex: string | null = null;

  override _transform(chunk: Buffer, _enc: BufferEncoding, callback: TransformCallback): void {
    this.hash.update(chunk);
    callback(null, chunk);
  }

  override _flush(callback: TransformCallback): void {
    this.hex = this.hash.digest('hex');
    callback();
  }

  get digest(): string {
    if (this.hex === null) throw new Error('the stream has not ended yet');
    return this.hex;
  }
}
