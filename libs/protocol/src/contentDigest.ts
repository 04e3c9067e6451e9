/** A Content-Digest header that cannot be understood; the service answers 400. */
export class DigestSyntaxError extends Error {
  override readonly name = 'DigestSyntaxError';
  readonly code = 'CP_ERR_DIGEST_SYNTAX';
}

// One member of an RFC 9530 digest field: `sha-256=:<base64>:`, parameters (`;...`) ignored.
const MEMBER = /^([a-z][a-z0-9_.*-]*)\s*=\s*:([A-Za-z0-9+/]*={0,2}):\s*(;.*)?$/;

/**
 * The digest algorithms the content API knows, with their digest sizes in bytes: `sha-256` (RFC
 * 9530), and `crc64nvme`, the CRC-64/NVME of the whole content that S3 keeps for every object
 * however its parts came (big-endian, as S3's `x-amz-checksum-crc64nvme`).
 */
export const DIGEST_ALGORITHMS = { 'sha-256': 32, crc64nvme: 8 } as const;

export type DigestAlgorithm = keyof typeof DIGEST_ALGORITHMS;

/**
 * Reads a `Content-Digest` (or `Repr-Digest`) field, RFC 9530: a dictionary of algorithm to digest,
 * `sha-256=:<base64>:, ...`. Returns the digests of the algorithms in DIGEST_ALGORITHMS; others are
 * ignored, as the RFC allows. A member that is not of that form, or a known algorithm's digest of the
 * wrong size, is a DigestSyntaxError (the field cannot be trusted in part).
 */
export function parseContentDigest(header: string): Partial<Record<DigestAlgorithm, Buffer>> {
  const found: Partial<Record<DigestAlgorithm, Buffer>> = {};
  for (const member of header.split(',')) {
    const m = MEMBER.exec(member.trim());
    if (!m)
      throw new DigestSyntaxError(
        `Content-Digest member ${JSON.stringify(member.trim())} is not "<algorithm>=:<base64>:"`,
      );
    const algorithm = m[1] as string;
    if (!(algorithm in DIGEST_ALGORITHMS)) continue;
    const digest = Buffer.from(m[2]!, 'base64');
    const size = DIGEST_ALGORITHMS[algorithm as DigestAlgorithm];
    if (digest.length !== size || digest.toString('base64') !== m[2])
      throw new DigestSyntaxError(`the ${algorithm} digest must be ${size} bytes in base64`);
    found[algorithm as DigestAlgorithm] = digest;
  }
  return found;
}

/** Writes a digest field: `sha-256=:<base64>:`. */
export function formatDigest(digests: Partial<Record<DigestAlgorithm, Buffer>>): string {
  return Object.entries(digests)
    .map(([algorithm, digest]) => `${algorithm}=:${digest.toString('base64')}:`)
    .join(', ');
}
