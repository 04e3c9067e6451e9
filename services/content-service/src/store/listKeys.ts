import { ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';

/** Sends one call with the store's deadline on its answer. */
type Bounded = <O>(send: (abortSignal: AbortSignal) => Promise<O>) => Promise<O>;

/** One page of keys, in S3's order (UTF-8 binary); `truncated` when more follow the last. */
export interface KeyPage {
  keys: string[];
  truncated: boolean;
}

/**
 * Up to `max` (at most 1,000) keys under `prefix` that sort after `startAfter`: one
 * ListObjectsV2, whose cost depends on the keys under the prefix, not on the rest of the bucket.
 */
export async function listKeys(
  s3: S3Client,
  bucket: string,
  page: { prefix: string; startAfter?: string; max: number },
  bounded: Bounded,
): Promise<KeyPage> {
  const command = new ListObjectsV2Command({
    Bucket: bucket,
    Prefix: page.prefix,
    StartAfter: page.startAfter,
    MaxKeys: page.max,
  });
  const out = await bounded((abortSignal) => s3.send(command, { abortSignal }));
  const keys = (out.Contents ?? []).flatMap((object) => (object.Key ? [object.Key] : []));
  return { keys, truncated: out.IsTruncated === true };
}
