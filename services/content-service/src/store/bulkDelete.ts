import { DeleteObjectCommand, DeleteObjectsCommand, ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';

/** Sends one call with the store's deadline on its answer. */
type Bounded = <O>(send: (abortSignal: AbortSignal) => Promise<O>) => Promise<O>;

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

/** Deletes every object under a prefix, a page of 1,000 at a time; returns how many. */
export async function deletePrefix(s3: S3Client, bucket: string, prefix: string, bounded: Bounded): Promise<number> {
  let deleted = 0;
  let token: string | undefined;
  do {
    const command = new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token });
    const page = await bounded((abortSignal) => s3.send(command, { abortSignal }));
    const keys = (page.Contents ?? []).flatMap((object) => (object.Key ? [object.Key] : []));
    await deleteMany(s3, bucket, keys, bounded);
    deleted += keys.length;
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  return deleted;
}
