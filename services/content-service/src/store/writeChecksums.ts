import type { TrailingChecksum } from './DirectS3';

/** Digests a client named for a body, passed on to S3 with the write (see ObjectStore.sum). */
export interface BodyChecksum {
  sha256?: Buffer | null;
  crc64nvme?: Buffer | null;
}

/** S3 refused a write whose bytes did not have the checksum it carried: the client's (`ofClient`), or the service's own. */
export class ChecksumRefused extends Error {
  override readonly name = 'ChecksumRefused';
  readonly code = 'CP_ERR_CHECKSUM_REFUSED';
  constructor(
    readonly ofClient: boolean,
    options?: ErrorOptions,
  ) {
    super(
      ofClient
        ? 'the body does not have the digest its Content-Digest names'
        : 'S3 received other bytes than the service sent',
      options,
    );
  }
}

/**
 * The checksum a write carries, once S3 is known to check them. A whole content's object: the
 * client's CRC-64/NVME, else one the service takes (the whole-content digest S3 keeps is then the
 * one it keeps by default; a SHA-256 is checked by the service and kept in metadata). A part or
 * a staged piece: the client's SHA-256, else its CRC-64/NVME, else a CRC-32 the service takes.
 */
export function writeChecksum(
  given: BodyChecksum | undefined,
  whole: boolean,
): { headers: Record<string, string>; trailer?: TrailingChecksum } {
  const header = (algorithm: string, value: Buffer) => ({
    headers: { [`x-amz-checksum-${algorithm}`]: value.toString('base64') },
  });
  if (whole) return given?.crc64nvme ? header('crc64nvme', given.crc64nvme) : { headers: {}, trailer: 'crc64nvme' };
  if (given?.sha256) return header('sha256', given.sha256);
  if (given?.crc64nvme) return header('crc64nvme', given.crc64nvme);
  return { headers: {}, trailer: 'crc32' };
}
