// A request body held to the length it declared and to its digests (ExactLengthStream), and
// exactBody, which puts one between a request and storage.
import { type Readable, Transform, type TransformCallback } from 'node:stream';
import { createHash, type Hash } from 'node:crypto';
import { type Crc64Nvme } from '@cp/protocol';

/** The client went away before its body was complete. */
export class ClientDisconnected extends Error {
  override readonly name = 'ClientDisconnected';
  readonly code = 'CP_ERR_CLIENT_DISCONNECTED';
  constructor() {
    super('the client closed the connection before the body was complete');
  }
}

/**
 * Wraps a request body so that whatever reads it gets exactly `expected` bytes or an error:
 * a short body, a long body and a dropped connection all fail the stream. With `atMost`, only a
 * body longer than `expected` fails; with `hash`, the stream keeps the bytes' SHA-256.
 */
export function exactBody(source: Readable, expected: number, options: ExactLengthOptions = {}): ExactLengthStream {
  const counted = new ExactLengthStream(expected, options);
  source.on('error', (error) => counted.destroy(error));
  source.on('close', () => {
    if (!source.readableEnded) counted.destroy(new ClientDisconnected());
  });
  source.pipe(counted);
  return counted;
}

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

/** Raised when a body's SHA-256 (or CRC-64/NVME) is not the one its Content-Digest names. */
export class DigestMismatch extends Error {
  override readonly name = 'DigestMismatch';
  readonly code = 'CP_ERR_DIGEST_MISMATCH';
  constructor(algorithm: 'sha-256' | 'crc64nvme' = 'sha-256') {
    super(`the body does not have the ${algorithm} digest its Content-Digest names`);
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
  /** The CRC-64/NVME the bytes must have, taken with `hasher`: checked as `sha256` is. */
  crc64nvme?: { hasher: Crc64Nvme; expected: Buffer } | null;
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
  private readonly crc: { hasher: Crc64Nvme; expected: Buffer } | null;
  private hex: string | null = null;
  private settled = false;

  constructor(
    readonly expected: number,
    options: ExactLengthOptions = {},
  ) {
    super();
    this.atMost = options.atMost ?? false;
    this.sha256 = options.sha256 ?? null;
    this.hash = options.hash || this.sha256 ? createHash('sha256') : null;
    this.crc = options.crc64nvme ?? null;
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
    this.hash?.update(chunk);
    this.crc?.hasher.update(chunk);
    const mismatch = this.seen === this.expected && !this.settled ? this.settle() : null;
    if (mismatch) callback(mismatch);
    else callback(null, chunk);
  }

  override _flush(callback: TransformCallback): void {
    if (this.seen !== this.expected && !this.atMost) {
      callback(new BodyLengthMismatch(this.expected, this.seen, false));
      return;
    }
    callback(this.settled ? null : this.settle());
  }

  /** Ends the digests (once); the mismatch when the bytes do not have one they must. */
  private settle(): DigestMismatch | null {
    this.settled = true;
    if (this.hash) {
      const digest = this.hash.digest();
      this.hex = digest.toString('hex');
      if (this.sha256 !== null && !digest.equals(this.sha256)) return new DigestMismatch('sha-256');
    }
    if (this.crc && !this.crc.hasher.digest().equals(this.crc.expected)) return new DigestMismatch('crc64nvme');
    return null;
  }
}
