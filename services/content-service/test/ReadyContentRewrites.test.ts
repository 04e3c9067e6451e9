// A write to a ready content (a retry of its bytes) that races the content's DELETE: the stored
// bytes it would be compared with are gone, which is the content gone (404), not a failure (500).
import { Readable } from 'node:stream';
import { ServiceError } from '@cp/errors';
import { S3Refusal } from '../src/store/DirectS3';
import type { ObjectStore } from '../src/store/ObjectStore';
import { ReadyContentRewrites } from '../src/uploads/ReadyContentRewrites';
import type { UploadContext } from '../src/uploads/UploadContext';

describe('ReadyContentRewrites', () => {
  it('answers 404 contentNotFound when the content was deleted before its bytes could be read', async () => {
    const objects: Pick<ObjectStore, 'getRange'> = {
      getRange: () => Promise.reject(new S3Refusal(404, 'NoSuchKey')),
    };
    const rewrites = new ReadyContentRewrites({ objects } as unknown as UploadContext);
    const ready = { id: '00000000-0000-4000-8000-000000000001', s3Key: 'contents/o/c', total: 10 };
    const outcome = await rewrites
      .rewrite(Readable.from([Buffer.from('01234')]), ready, { start: 0, end: 4, total: 10 })
      .catch((error: unknown) => error);
    expect(outcome).toBeInstanceOf(ServiceError);
    expect(outcome).toMatchObject({ status: 404, code: 'contentNotFound' });
  });
});
