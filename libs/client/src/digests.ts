import { createHash } from 'node:crypto';
import { crc64nvme, parseContentDigest, type DigestAlgorithm } from '#protocol';
import { IntegrityError } from './errors';

/** A body's digests, as Content-Digest sends them and Repr-Digest names them for a whole content. */
export interface BodyDigests {
  sha256: Buffer;
  /** CRC-64/NVME, big-endian (as S3 gives it). */
  crc64nvme: Buffer;
}

/** The SHA-256 and CRC-64/NVME of a body, read through once. */
export async function digestsOf(body: AsyncIterable<Uint8Array> | Iterable<Uint8Array>): Promise<BodyDigests> {
  const hash = createHash('sha256');
  const crc = await crc64nvme();
  for await (const chunk of body) {
    hash.update(chunk);
    crc.update(chunk);
  }
  return { sha256: hash.digest(), crc64nvme: crc.digest() };
}

/** The digests (hex) a Repr-Digest names; none for one that cannot be read. */
export function reprDigests(reprDigest: string | undefined): Partial<Record<DigestAlgorithm, string>> {
  try {
    const parsed = reprDigest ? parseContentDigest(reprDigest) : {};
    return Object.fromEntries(Object.entries(parsed).map(([name, digest]) => [name, digest.toString('hex')]));
  } catch {
    return {};
  }
}

// CRC-64/NVME combination, the method of zlib's crc32_combine: the CRC of A‖B from the CRCs of A
// and B and B's length, so that parts hashed in any order give the whole content's CRC.
const POLY = 0x9a6c9329ac4bc9b5n; // the CRC-64/NVME polynomial, bit-reflected
const X0 = 1n << 63n; // x^0, reflected

/** a·b modulo the polynomial. */
function multModP(a: bigint, b: bigint): bigint {
  let m = X0;
  let p = 0n;
  for (;;) {
    if (a & m) {
      p ^= b;
      if ((a & (m - 1n)) === 0n) return p;
    }
    m >>= 1n;
    b = b & 1n ? (b >> 1n) ^ POLY : b >> 1n;
  }
}

/** x^(2^k) modulo the polynomial, k = 0..63. */
const X2N: bigint[] = [1n << 62n];
for (let k = 1; k < 64; k++) X2N.push(multModP(X2N[k - 1]!, X2N[k - 1]!));

/** The CRC-64/NVME of A‖B, from crc(A), crc(B) and B's length in bytes. */
export function combineCrc64(crcA: Buffer, crcB: Buffer, lengthB: number): Buffer {
  let shift = X0; // x^(8·lengthB)
  for (let n = lengthB, k = 3; n > 0; n = Math.floor(n / 2), k++) if (n % 2 === 1) shift = multModP(X2N[k]!, shift);
  const out = Buffer.alloc(8);
  out.writeBigUInt64BE(multModP(shift, crcA.readBigUInt64BE()) ^ crcB.readBigUInt64BE());
  return out;
}

/** The CRC-64/NVME of the empty body. */
export const EMPTY_CRC64 = Buffer.alloc(8);

/**
 * Holds a whole content's digests, as this client computed them, against those the service names
 * (Repr-Digest); an IntegrityError says which algorithm differed and both values. A digest the
 * service does not name is not checked.
 */
export function checkRepr(
  named: { sha256: string | null; crc64nvme: string | null },
  computed: Partial<BodyDigests>,
  what: string,
): void {
  const pairs: [string, string | null, Buffer | undefined][] = [
    ['SHA-256', named.sha256, computed.sha256],
    ['CRC-64/NVME', named.crc64nvme, computed.crc64nvme],
  ];
  for (const [algorithm, theirs, ours] of pairs) {
    if (theirs !== null && ours !== undefined && ours.toString('hex') !== theirs)
      throw new IntegrityError(
        `${algorithm} of ${what} is ${ours.toString('hex')}; the service's Repr-Digest names ${theirs}`,
      );
  }
}
