import { ServiceError } from '@cp/errors';
import { unquote, type ObjectStore } from '../store/ObjectStore';
import type { UploadRecord } from '../store/UploadBook';

/** Bytes a client put into S3 part k itself, with a presigned URL: S3's ETag for them. */
export interface PartInS3 {
  etag: string;
}

/** 409 directPartMissing unless S3 holds part k of the upload with that ETag and exactly `length` bytes. */
export async function checkPartInS3(
  objects: ObjectStore,
  record: UploadRecord,
  k: number,
  length: number,
  etag: string,
  signal?: AbortSignal,
): Promise<void> {
  const held = (await objects.listParts(record.s3Key, record.uploadId, signal)).get(k);
  if (!held || held.etag !== unquote(etag) || held.size !== length)
    throw ServiceError.of(
      'directPartMissing',
      held
        ? `S3 holds part ${k} with ${held.size} bytes and another ETag than ${JSON.stringify(etag)}, not the ${length} bytes sent: send it again`
        : `S3 holds no part ${k} of this upload: send it to its URL (again)`,
    );
}
