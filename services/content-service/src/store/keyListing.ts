import { DeleteObjectCommand, DeleteObjectsCommand, ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import type { Bounded } from './S3Progress';

/** One page of keys, in S3's order (UTF-8 binary), and their objects' sizes; `truncated` when more follow the last. */
export interface KeyPage {
  keys: string[];
  sizes: number[];
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
  const objects = (out.Contents ?? []).filter((object) => object.Key);
  return {
    keys: objects.map((object) => object.Key!),
    sizes: objects.map((object) => object.Size ?? 0),
    truncated: out.IsTruncated === true,
  };
}

/** Deletes objects, up to 1,000 per request. Keys that do not exist are not an error. */
export async function deleteMany(s3: S3Client, bucket: string, keys: string[], bounded: Bounded): Promise<void> {
  for (let i = 0; i < keys.length; i += 1000) {
    const batch = keys.slice(i, i + 1000);
    if (batch.length === 1) {
      await bounded((abortSignal) =>
        s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: batch[0] }), { abortSignal }),
      );
      continue;
    }
    const Delete = { Objects: batch.map((Key) => ({ Key })), Quiet: true };
    const command = new DeleteObjectsCommand({ Bucket: bucket, Delete });
    const out = await bounded((abortSignal) => s3.send(command, { abortSignal }));
    const failed = (out.Errors ?? []).filter((e) => e.Code !== 'NoSuchKey');
    const first = failed[0];
    if (first)
      throw new Error(
        `S3 could not delete ${failed.length} objects, first ${first.Key}: ${first.Code} ${first.Message ?? ''}`,
      );
  }
}

/** Deletes every object under a prefix, a page of 1,000 at a time (see listKeys); returns how many. */
export async function deletePrefix(s3: S3Client, bucket: string, prefix: string, bounded: Bounded): Promise<number> {
  let deleted = 0;
  let startAfter: string | undefined;
  for (;;) {
    const page = await listKeys(s3, bucket, { prefix, startAfter, max: 1000 }, bounded);
    await deleteMany(s3, bucket, page.keys, bounded);
    deleted += page.keys.length;
    if (!page.truncated || page.keys.length === 0) return deleted;
    startAfter = page.keys[page.keys.length - 1];
  }
}
