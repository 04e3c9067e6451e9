import { createHash, type Hash } from 'node:crypto';
import { Transform, type TransformCallback } from 'node:stream';

/** Raised when a body carries more or fewer bytes than its range says. */
export class BodyLengthMismatch extends Error {
  override readonly name = 'BodyLengthMismatch';
  readonly code = 'CP_ERR_BODY_LENGTH';
  constructor(
    readonly expected: number,
    readonly received: number,
    readonly overflow: boolean,
  ) {
    super(
      overflow
        ? `the body is longer than the ${expected} bytes its range names`
        : `the body ended after ${received} of ${expected} bytes`,
    );
  }
}

/** Raised when a body's SHA-256 is not the one its Content-Digest names. */
export class DigestMismatch extends Error {
  override readonly name = 'DigestMismatch';
  readonly code = 'CP_ERR_DIGEST_MISMATCH';
  constructor() {
    super('the body does not have the sha-256 digest its Content-Digest names');
  }
}

export interface ExactLengthOptions {
  /** A shorter body is fine: only overflowing `expected` fails. */
  atMost?: boolean;
  /** Keep the SHA-256 of the bytes (`digest`). */
  hash?: boolean;
  /**
   * The SHA-256 the bytes must have (a Content-Digest): checked before the last chunk is passed on,
   * so a body with another digest fails (DigestMismatch) without its reader ever getting all of it.
   */
  sha256?: Buffer | null;
}

/**
 * Passes bytes through while counting them; fails the stream as soon as it sees more than
 * `expected`, or at the end when it saw fewer. Put between a request and UploadPart so a short or
 * long body never becomes a stored part. With `hash`, it also keeps the bytes' SHA-256 (one
 * stream in the path, not two): the digest is ready as soon as `expected` bytes have passed,
 * before the stream ends, since S3 answers a PutObject once it has its Content-Length of bytes,
 * which can be before the request body's end (a chunked body's last, empty chunk) arrives.
 */
export class ExactLengthStream extends Transform {
  private seen = 0;
  private readonly atMost: boolean;
  private readonly hash: Hash | null;
  private readonly sha256: Buffer | null;
  private hex: string | null = null;

  constructor(
    readonly expected: number,
    options: ExactLengthOptions = {},
  ) {
    super();
    this.atMost = options.atMost ?? false;
    this.sha256 = options.sha256 ?? null;
    this.hash = options.hash || this.sha256 ? createHash('sha256') : null;
  }

  get bytesSeen(): number {
    return this.seen;
  }

  /** The SHA-256 (hex) of the bytes, once `expected` of them have passed (or the stream ended); needs `hash`. */
  get digest(): string {
    if (this.hash === null) throw new Error('this stream keeps no digest');
    if (this.hex === null) throw new Error('the stream has not ended yet');
    return this.hex;
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, callback: TransformCallback): void {
    this.seen += chunk.length;
    if (this.seen > this.expected) {
      callback(new BodyLengthMismatch(this.expected, this.seen, true));
      return;
    }
    if (this.hash) {
      this.hash.update(chunk);
      if (this.seen === this.expected && !this.settle()) {
        callback(new DigestMismatch());
        return;
      }
    }
    callback(null, chunk);
  }

  override _flush(callback: TransformCallback): void {
    if (this.seen !== this.expected && !this.atMost) {
      callback(new BodyLengthMismatch(this.expected, this.seen, false));
      return;
    }
    if (this.hash && this.hex === null && !this.settle()) {
      callback(new DigestMismatch());
      return;
    }
    callback();
  }

  /** Ends the hash; false when the bytes do not have the digest they must. */
  private settle(): boolean {
    const digest = this.hash!.digest();
    this.hex = digest.toString('hex');
    return this.sha256 === null || digest.equals(this.sha256);
  }
}
