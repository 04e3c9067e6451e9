import { S3ServiceException } from '@aws-sdk/client-s3';
import { S3Refusal } from './DirectS3';
import { StorageTimeout } from './S3Progress';

export function unquote(etag: string): string {
  return etag.replace(/^"|"$/g, '');
}

export function isNotFound(error: unknown): boolean {
  if (error instanceof S3Refusal) return error.status === 404;
  if (!(error instanceof S3ServiceException)) return false;
  return (
    error.$metadata.httpStatusCode === 404 ||
    ['NoSuchKey', 'NotFound', 'NoSuchUpload', 'NoSuchBucket'].includes(error.name)
  );
}

/** S3's NoSuchUpload: the multipart upload named is not (or no longer) one S3 holds. */
export function isNoSuchUpload(error: unknown): boolean {
  if (error instanceof S3Refusal) return error.s3Code === 'NoSuchUpload';
  return error instanceof S3ServiceException && error.name === 'NoSuchUpload';
}

/** A failure of S3 itself (network, 5xx), as opposed to a refusal of this request. */
export function isS3Unavailable(error: unknown): boolean {
  if (error instanceof S3ServiceException) return (error.$metadata.httpStatusCode ?? 500) >= 500;
  if (error instanceof S3Refusal) return error.status >= 500;
  // The SDK's connection and socket timeouts are plain errors named TimeoutError, with no code.
  if (error instanceof Error && error.name === 'TimeoutError') return true;
  if (error instanceof StorageTimeout) return true;
  const code = (error as { code?: string } | null)?.code;
  return (
    typeof code === 'string' &&
    [
      'ECONNREFUSED',
      'ECONNRESET',
      'ETIMEDOUT',
      'EPIPE',
      'EHOSTUNREACH',
      'ENETUNREACH',
      'ENOTFOUND',
      'EAI_AGAIN',
    ].includes(code)
  );
}

/** S3's 416: the range starts at or past the object's end. */
export function isRangeRefused(error: unknown): boolean {
  if (error instanceof S3Refusal) return error.status === 416;
  return (
    error instanceof S3ServiceException && (error.$metadata.httpStatusCode === 416 || error.name === 'InvalidRange')
  );
}

/** The call's answer, or null when S3 says there is no such object, upload or bucket. */
export async function orNull<O>(call: Promise<O>): Promise<O | null> {
  try {
    return await call;
  } catch (error) {
    if (isNotFound(error)) return null;
    throw error;
  }
}
