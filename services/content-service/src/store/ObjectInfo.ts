import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import { parseContentRange, type ContentRange, type DigestAlgorithm } from '@cp/protocol';

/** What S3 answers about an object: the record of a finished content. */
export interface ObjectInfo {
  /** The whole object's size. */
  contentLength: number;
  etag: string;
  contentType: string;
  lastModified: Date | null;
  /** User metadata (`x-amz-meta-*`), names in lower case. */
  metadata: Record<string, string>;
  /** Digests of the whole object: S3's full-object CRC-64/NVME, and the SHA-256 it was stored with, where known. */
  digests: Partial<Record<DigestAlgorithm, Buffer>>;
}

/** What S3's answer to a HeadObject or GetObject says of the object; `contentLength` is the whole object's. */
export function infoOf(res: IncomingMessage, contentLength: number): ObjectInfo {
  const metadata: Record<string, string> = {};
  for (const [name, value] of Object.entries(res.headers))
    if (name.startsWith('x-amz-meta-') && typeof value === 'string') metadata[name.slice(11)] = value;
  const modified = res.headers['last-modified'];
  return {
    contentLength,
    etag: res.headers.etag ?? '',
    contentType: res.headers['content-type'] ?? 'application/octet-stream',
    lastModified: modified ? new Date(modified) : null,
    metadata,
    digests: digestsOf(res, metadata),
  };
}

/**
 * The whole-object digests in S3's answer (asked for with `x-amz-checksum-mode: ENABLED`): its
 * CRC-64/NVME when S3 says it covers the whole object (not a checksum of part checksums), and the
 * SHA-256 the object was stored with (S3's own, or the one checked on the way in and kept in metadata).
 */
function digestsOf(res: IncomingMessage, metadata: Record<string, string>): ObjectInfo['digests'] {
  const digests: ObjectInfo['digests'] = {};
  const header = (name: string) => {
    const value = res.headers[name];
    return typeof value === 'string' ? value : undefined;
  };
  const fullObject = (header('x-amz-checksum-type') ?? 'FULL_OBJECT') === 'FULL_OBJECT';
  const sha256 = Buffer.from((fullObject && header('x-amz-checksum-sha256')) || metadata.sha256 || '', 'base64');
  if (sha256.length === 32) digests['sha-256'] = sha256;
  const crc = Buffer.from(header('x-amz-checksum-crc64nvme') ?? '', 'base64');
  if (fullObject && crc.length === 8) digests.crc64nvme = crc;
  return digests;
}

/** Asks S3 to answer with the object's checksums (HeadObject, GetObject). */
export const CHECKSUM_MODE = { 'x-amz-checksum-mode': 'ENABLED' } as const;

/** User metadata as the request headers that carry it. */
export function metaHeaders(metadata: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(metadata).map(([name, value]) => [`x-amz-meta-${name}`, value]));
}

export interface StoredObject {
  body: Readable;
  contentLength: number;
}

export interface ObjectStoreTimeouts {
  /**
   * How long a call without a streamed body may wait for S3's answer (its headers), SDK retries
   * included. CompleteMultipartUpload, which S3 may take minutes over for a large object, is left out.
   */
  callMs: number;
  /** How long a streamed body may make no progress that S3 is to blame for before the call fails. */
  stallMs: number;
}

/** An object as GetObject serves it: `start` and `ranged` tell whether S3 served the range asked for. */
export type ServedObject = StoredObject & { info: ObjectInfo; start: number; ranged: boolean };

/** The range S3 says it served (its Content-Range); null when it served the whole object. */
export function servedRange(header: string | undefined): ContentRange | null {
  try {
    return header ? parseContentRange(header) : null;
  } catch {
    return null;
  }
}
