import type { Readable } from 'node:stream';

/** What S3 answers about an object: the record of a finished content. */
export interface ObjectInfo {
  /** The whole object's size. */
  contentLength: number;
  etag: string;
  contentType: string;
  lastModified: Date | null;
  /** User metadata (`x-amz-meta-*`), names in lower case. */
  metadata: Record<string, string>;
}

export function objectInfo(
  out: { ETag?: string; ContentType?: string; LastModified?: Date; Metadata?: Record<string, string> },
  contentLength: number,
): ObjectInfo {
  return {
    contentLength,
    etag: out.ETag ?? '',
    contentType: out.ContentType ?? 'application/octet-stream',
    lastModified: out.LastModified ?? null,
    metadata: out.Metadata ?? {},
  };
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
