import {
  CreateBucketCommand,
  PutBucketLifecycleConfigurationCommand,
  S3ServiceException,
  type S3Client,
} from '@aws-sdk/client-s3';
import { isNotFound } from './s3Errors';
import type { Bounded } from './S3Progress';

/** Creates the bucket when `ping` (a HeadBucket) finds none; one created meanwhile by another replica is fine. */
export async function ensureBucket(s3: S3Client, bucket: string, bounded: Bounded, ping: () => Promise<void>) {
  try {
    await ping();
  } catch (error) {
    if (!isNotFound(error)) throw error;
    try {
      await bounded((abortSignal) => s3.send(new CreateBucketCommand({ Bucket: bucket }), { abortSignal }));
    } catch (createError) {
      if (!(createError instanceof S3ServiceException && /BucketAlready(Exists|OwnedByYou)/.test(createError.name)))
        throw createError;
    }
  }
}

/**
 * Sets the rule that aborts multipart uploads `days` after they began: the backstop for uploads the
 * sweeper never saw. False when the server refuses it (not every S3 server supports it).
 */
export async function setAbortIncompleteUploadsRule(
  s3: S3Client,
  bucket: string,
  days: number,
  bounded: Bounded,
): Promise<boolean> {
  const rule = {
    ID: 'abort-incomplete-multipart-uploads',
    Status: 'Enabled' as const,
    Filter: { Prefix: '' },
    AbortIncompleteMultipartUpload: { DaysAfterInitiation: days },
  };
  const command = new PutBucketLifecycleConfigurationCommand({
    Bucket: bucket,
    LifecycleConfiguration: { Rules: [rule] },
  });
  try {
    await bounded((abortSignal) => s3.send(command, { abortSignal }));
    return true;
  } catch (error) {
    // 4xx: refused; 501: the server has no lifecycle rules at all (versitygw)
    const status = error instanceof S3ServiceException ? (error.$metadata.httpStatusCode ?? 500) : 500;
    if (status < 500 || status === 501) return false;
    throw error;
  }
}
