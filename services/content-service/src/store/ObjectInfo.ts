import type { IncomingMessage } from 'node:http';
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
  };
}

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
