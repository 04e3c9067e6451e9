import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';

/**
 * Cuts a request body into consecutive slices, each a stream of its own, read on demand: the
 * bytes pass through as they arrive (nothing is held but the chunk being cut). A slice ends early
 * when the body does, and fails when the body fails.
 */
export class BodySlices {
  private readonly chunks: AsyncIterator<Buffer>;
  private leftover: Buffer | null = null;

  constructor(body: Readable) {
    this.chunks = body[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  }

  /** A stream of the body's next `length` bytes. Read each slice to its end before asking for the next. */
  next(length: number): Readable {
    const take = async function* (this: BodySlices): AsyncGenerator<Buffer> {
      let left = length;
      while (left > 0) {
        let chunk = this.leftover;
        this.leftover = null;
        if (!chunk) {
          const read = await this.chunks.next();
          if (read.done) return;
          chunk = read.value;
        }
        if (chunk.length > left) {
          this.leftover = chunk.subarray(left);
          chunk = chunk.subarray(0, left);
        }
        left -= chunk.length;
        yield chunk;
      }
    };
    return Readable.from(take.call(this), { objectMode: false });
  }
}

/** A body whose digest is not the one its Upload-Checksum names. */
export class ChecksumMismatch extends Error {
  override readonly name = 'ChecksumMismatch';
  readonly code = 'CP_ERR_TUS_CHECKSUM_MISMATCH';
}

/**
 * `slice` with its digest checked: the bytes pass on while their digest is taken, and the latest
 * chunk is held back until the end, so a body with another digest fails (ChecksumMismatch) before
 * its reader has all of it, and the writer behind never stores it. Read on demand, like the slice:
 * nothing runs, and nothing can fail, before a reader asks for bytes.
 */
export class ChecksumCheck {
  /** Set when the digest did not match (the stream failed with ChecksumMismatch). */
  mismatch = false;

  constructor(
    private readonly algorithm: string,
    private readonly expected: Buffer,
  ) {}

  of(slice: Readable): Readable {
    const check = async function* (this: ChecksumCheck): AsyncGenerator<Buffer> {
      const hash = createHash(this.algorithm);
      let held: Buffer | null = null;
      for await (const chunk of slice as AsyncIterable<Buffer>) {
        hash.update(chunk);
        if (held) yield held;
        held = chunk;
      }
      if (!hash.digest().equals(this.expected)) {
        this.mismatch = true;
        throw new ChecksumMismatch('the body does not have the digest its Upload-Checksum names');
      }
      if (held) yield held;
    };
    return Readable.from(check.call(this), { objectMode: false });
  }
}
