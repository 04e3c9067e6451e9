// What ContentClient's calls take and answer, apart from the client, so that the modules that
// carry the calls out (PartUpload) need not import the client that calls them.
import type { UploadState } from './api';
import type { ByteRange } from './ranges';

export interface Progress {
  /** Bytes done, of `total` (null while a stream's length is not known). */
  done: number;
  total: number | null;
}

export interface UploadOptions {
  owner: string;
  /** Continue this content: only the parts the service lacks are sent. */
  resume?: string;
  concurrency?: number;
  contentType?: string;
  signal?: AbortSignal;
  onProgress?: (p: Progress) => void;
  /** Called once the content id is known (before the rest of the parts), e.g. to print it for --resume. */
  onContentId?: (id: string) => void;
  /** Send 64 MiB parts straight to S3 where the service offers it (presigned URLs); others go through the service. */
  direct?: boolean;
}

export interface StreamUploadOptions extends UploadOptions {
  /** The stream's length when known beforehand; otherwise parts go as `bytes a-b/*` until the end. */
  size?: number;
  /** Where parts wait on disk until they are sent (default: the system's temporary directory). */
  spoolDir?: string;
}

export interface DownloadOptions {
  owner: string;
  concurrency?: number;
  /** Range size per request. */
  chunkSize?: number;
  /** Keep what an interrupted download already wrote (a `<file>.partial` and its progress file). */
  resume?: boolean;
  /** When set, the downloaded file's SHA-256 must be this (hex). */
  sha256?: string;
  /** Ask for each range as a redirect to S3 (`Prefer: redirect`) and fetch it there; served by the service where it is not offered. */
  direct?: boolean;
  signal?: AbortSignal;
  onProgress?: (p: Progress) => void;
}

export interface ContentStatus {
  state: UploadState;
  total: number | null;
  received: ByteRange[];
  etag: string | null;
  contentType: string | null;
  /** The content's SHA-256 (hex) as its Repr-Digest names it; null where the service has none. */
  sha256: string | null;
  /** The content's CRC-64/NVME (hex) as its Repr-Digest names it; null where the service has none. */
  crc64nvme: string | null;
}
