import { Transform, type TransformCallback } from 'node:stream';

/** Raised when a body carries more or fewer bytes than its range says. */
export class BodyLengthMismatch extends Error {
  override readonly name = 'BodyLengthMismatch';
  constructor(
    readonly expected: number,
    readonly received: number,
    readonly overflow: boolean,
  ) {
    super(overflow ? `the body is longer than the ${expected} bytes its range names` : `the body ended after ${received} of ${expected} bytes`);
  }
}

/**
 * Passes bytes through while counting them; fails the stream as soon as it sees more than
 * `expected`, or at the end when it saw fewer. Put between a request and UploadPart so a short or
 * long body never becomes a stored part.
 */
export class ExactLengthStream extends Transform {
  private seen = 0;

  /** With `atMost`, a shorter body is fine: only overflowing `expected` fails. */
  constructor(
    readonly expected: number,
    private readonly atMost = false,
  ) {
    super();
  }

  get bytesSeen(): number {
    return this.seen;
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, callback: TransformCallback): void {
    this.seen += chunk.length;
    if (this.seen > this.expected) {
      callback(new BodyLengthMismatch(this.expected, this.seen, true));
      return;
    }
    callback(null, chunk);
  }

  override _flush(callback: TransformCallback): void {
    if (this.seen !== this.expected && !this.atMost) callback(new BodyLengthMismatch(this.expected, this.seen, false));
    else callback();
  }
}
