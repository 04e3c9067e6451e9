import { S3ServiceException } from '@aws-sdk/client-s3';
import { S3Refusal } from '../src/store/DirectS3';
import { isS3Unavailable } from '../src/store/ObjectStore';

const s3Error = (status: number, name: string) =>
  new S3ServiceException({ name, $fault: status >= 500 ? 'server' : 'client', $metadata: { httpStatusCode: status } });

describe('isS3Unavailable', () => {
  it('counts S3 server errors, network failures and the SDK timeouts as S3 being unavailable', () => {
    expect(isS3Unavailable(s3Error(503, 'SlowDown'))).toBe(true);
    expect(isS3Unavailable(s3Error(500, 'InternalError'))).toBe(true);
    expect(isS3Unavailable(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }))).toBe(true);
    expect(isS3Unavailable(Object.assign(new Error('getaddrinfo EAI_AGAIN s3'), { code: 'EAI_AGAIN' }))).toBe(true);
    expect(isS3Unavailable(Object.assign(new Error('the request socket timed out'), { name: 'TimeoutError' }))).toBe(
      true,
    );
  });

  it('counts a folder removed under a write (a file-system S3 server’s 409) as S3 being unavailable', () => {
    expect(isS3Unavailable(s3Error(409, 'ExistingObjectIsDirectory'))).toBe(true);
    expect(isS3Unavailable(new S3Refusal(409, 'ExistingObjectIsDirectory'))).toBe(true);
    expect(isS3Unavailable(new S3Refusal(409, 'BucketNotEmpty'))).toBe(false);
  });

  it('does not count refusals of the request or the service’s own errors', () => {
    expect(isS3Unavailable(s3Error(403, 'AccessDenied'))).toBe(false);
    expect(isS3Unavailable(s3Error(404, 'NoSuchUpload'))).toBe(false);
    expect(isS3Unavailable(new TypeError('x is undefined'))).toBe(false);
    expect(isS3Unavailable(null)).toBe(false);
  });
});
