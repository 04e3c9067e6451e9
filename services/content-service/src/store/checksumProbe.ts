import { createHash, randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { ChecksumRefused, type BodyChecksum } from './writeChecksums';

/** What the probe asks of the store (ObjectStore), with checksums on while it runs. */
interface ProbedStore {
  putObject(
    key: string,
    body: Readable,
    length: number,
    contentType: string,
    options: { digests?: BodyChecksum },
  ): Promise<string>;
  createMultipartUpload(key: string, contentType: string): Promise<string>;
  uploadPart(
    key: string,
    uploadId: string,
    partNumber: number,
    body: Readable,
    length: number,
    signal?: AbortSignal,
    checksum?: BodyChecksum,
    whole?: boolean,
  ): Promise<string>;
  abortMultipartUpload(key: string, uploadId: string): Promise<void>;
  delete(key: string): Promise<void>;
}

/**
 * Whether S3 checks the checksums writes carry, asked of it with writes that leave nothing behind
 * (a bucket with Object Lock keeps every object it takes): a PutObject with a wrong SHA-256 must be
 * refused; so must an UploadPart, whose right SHA-256 and trailers of the checksums the service
 * takes itself (CRC-32, CRC-64/NVME) must be taken; the upload is then aborted. `store` sends
 * checksums while this runs. S3 not answering is thrown; a refusal of anything else is an answer (false).
 */
export async function probeChecksumChecks(store: ProbedStore): Promise<boolean> {
  const key = `staging/.checksum-probe-${randomUUID()}`;
  const bytes = Buffer.from('checksum probe');
  const right = { sha256: createHash('sha256').update(bytes).digest() };
  const wrong = { sha256: createHash('sha256').update('other bytes').digest() };
  const body = () => Readable.from([bytes]);
  const refused = (write: Promise<unknown>) =>
    write.then(
      () => false,
      (error: unknown) => {
        if (error instanceof ChecksumRefused) return true;
        throw error;
      },
    );
  try {
    if (!(await refused(store.putObject(key, body(), bytes.length, 'text/plain', { digests: wrong })))) {
      await store.delete(key).catch(() => undefined);
      return false;
    }
    const uploadId = await store.createMultipartUpload(key, 'text/plain');
    try {
      const part = (n: number, digests?: typeof right, whole = false) =>
        store.uploadPart(key, uploadId, n, body(), bytes.length, undefined, digests, whole);
      if (!(await refused(part(1, wrong)))) return false;
      await part(1, right);
      await part(2); // a CRC-32 trailer
      await part(3, undefined, true); // a CRC-64/NVME trailer
    } finally {
      await store.abortMultipartUpload(key, uploadId);
    }
    return true;
  } catch (error) {
    if (error instanceof ChecksumRefused || isRefusal(error)) return false;
    throw error;
  }
}

/** S3 answered the probe with a 4xx: it does not take these checksums (as opposed to not answering). */
function isRefusal(error: unknown): boolean {
  const status = (error as { status?: number } | null)?.status;
  return typeof status === 'number' && status >= 400 && status < 500;
}
