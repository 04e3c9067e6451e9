// DELETE /v1/{ownerId}/contents/{id}: a ready content's object goes; an unfinished upload is aborted
// as the sweeper expires one (its multipart upload, staged pieces and bookkeeping go). A DELETE
// racing the last part's PUT leaves one outcome whole: the PUT's 201 (the content completed, then
// deleted) or its 404 (nothing completed), and in both nothing of the content left anywhere.
import { randomBytes, randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { ListMultipartUploadsCommand, ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import { call, contentsUrl, download, newOwner, postPart, putPart, rangeOf, sha256, type Answer } from './support/http';
import { testS3Client, testStack, tokenFor } from './support/stack';

describe('DELETE of a content', () => {
  const owner = newOwner();
  const other = newOwner();
  const bucket = `${testStack().prefix}-contents`;
  let token: string;
  let otherToken: string;
  let s3: S3Client;

  beforeAll(async () => {
    [token, otherToken] = await Promise.all([tokenFor([owner]), tokenFor([other])]);
    s3 = testS3Client();
  });

  afterAll(() => s3?.destroy());

  const del = (id: string, as = owner, tok = token) => call(contentsUrl(as, id), { method: 'DELETE', token: tok });
  const idOf = (answer: Answer): string => answer.json().id as string;
  const codeOf = (answer: Answer) => `${answer.status} ${answer.headers.get('x-error-id') ?? ''}`;
  const notFound = '404 urn:error:contents:contentNotFound';

  /** What S3 still holds of a content: its object, its staged pieces, its open multipart upload. */
  async function inS3(id: string, of = owner): Promise<{ object: number; staged: number; uploads: number }> {
    const key = `contents/${of}/${id}`;
    const [object, staged, uploads] = await Promise.all([
      s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: key })),
      s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: `staging/${id}/` })),
      s3.send(new ListMultipartUploadsCommand({ Bucket: bucket, Prefix: key })),
    ]);
    return {
      object: (object.Contents ?? []).length,
      staged: (staged.Contents ?? []).length,
      uploads: (uploads.Uploads ?? []).filter((u) => u.Key === key).length,
    };
  }

  /** GET, HEAD, PUT and the receipt of the content all answer 404 contentNotFound. */
  async function expectGone(id: string): Promise<void> {
    const url = contentsUrl(owner, id);
    const answers = await Promise.all([
      download(owner, id, token),
      call(url, { method: 'HEAD', token }),
      putPart(owner, id, token, randomBytes(10), 'bytes 0-9/10'),
      call(`${url}/receipt`, { token }),
    ]);
    expect(answers.map(codeOf)).toEqual([notFound, notFound, notFound, notFound]);
  }

  it('deletes a ready content: its object goes, and GET, HEAD, PUT and its receipt answer 404', async () => {
    const created = await postPart(owner, token, randomBytes(1000), null, 'text/plain');
    expect(created.status).toBe(201);
    const id = idOf(created);
    expect(await inS3(id)).toEqual({ object: 1, staged: 0, uploads: 0 });
    const deleted = await del(id);
    expect(deleted.status).toBe(204);
    expect(deleted.body.length).toBe(0);
    await expectGone(id);
    expect(await inS3(id)).toEqual({ object: 0, staged: 0, uploads: 0 });
  });

  it('aborts an unfinished upload mid-upload: its staged pieces and multipart upload go too', async () => {
    const bytes = randomBytes(300);
    const first = await postPart(owner, token, bytes.subarray(0, 100), rangeOf(0, 100, 300));
    const id = idOf(first);
    expect((await putPart(owner, id, token, bytes.subarray(100, 200), rangeOf(100, 200, 300))).status).toBe(200);
    expect(await inS3(id)).toEqual({ object: 0, staged: 2, uploads: 1 });
    expect((await del(id)).status).toBe(204);
    await expectGone(id);
    expect(codeOf(await putPart(owner, id, token, bytes.subarray(200), rangeOf(200, 300, 300)))).toBe(notFound);
    expect(await inS3(id)).toEqual({ object: 0, staged: 0, uploads: 0 });
  });

  it("answers another owner's content as an unknown one (404) and leaves it alone", async () => {
    const bytes = randomBytes(500);
    const ready = idOf(await postPart(owner, token, bytes, null));
    const uploading = idOf(await postPart(owner, token, bytes.subarray(0, 100), rangeOf(0, 100, 500)));
    for (const id of [ready, uploading]) expect(codeOf(await del(id, other, otherToken))).toBe(notFound);
    // Credentials for one owner may not act for another at all.
    expect((await del(ready, owner, otherToken)).status).toBe(403);
    expect(sha256((await download(owner, ready, token)).body)).toBe(sha256(bytes));
    const head = await call(contentsUrl(owner, uploading), { method: 'HEAD', token });
    expect(`${head.status} ${head.headers.get('x-upload-state')}`).toBe('200 uploading');
    for (const id of [ready, uploading]) expect((await del(id)).status).toBe(204);
  });

  it('answers 404 for an unknown id and for the second of two DELETEs', async () => {
    expect(codeOf(await del(randomUUID()))).toBe(notFound);
    const id = idOf(await postPart(owner, token, randomBytes(10), null));
    expect((await del(id)).status).toBe(204);
    expect(codeOf(await del(id))).toBe(notFound);
    const upload = idOf(await postPart(owner, token, randomBytes(10), rangeOf(0, 10, 20)));
    expect((await del(upload)).status).toBe(204);
    expect(codeOf(await del(upload))).toBe(notFound);
  });

  it('leaves one outcome whole when a DELETE races the last part: completed then deleted, or aborted, nothing left', async () => {
    const rounds = 40;
    const seen: Record<string, number> = {};
    for (let round = 0; round < rounds; round++) {
      const bytes = randomBytes(3000);
      const id = idOf(await postPart(owner, token, bytes.subarray(0, 1000), rangeOf(0, 1000, 3000)));
      expect((await putPart(owner, id, token, bytes.subarray(1000, 2000), rangeOf(1000, 2000, 3000))).status).toBe(200);
      // The DELETE leaves at a varying moment around the last part's PUT.
      const [put, deleted] = await Promise.all([
        putPart(owner, id, token, bytes.subarray(2000), rangeOf(2000, 3000, 3000)),
        sleep((round % 10) * 3).then(() => del(id)),
      ]);
      let removal = deleted;
      // A completion still running past the DELETE's wait: the client sends it again.
      for (let i = 0; i < 20 && removal.status === 503; i++) removal = await sleep(200).then(() => del(id));
      const outcome = `PUT ${put.status}, DELETE ${removal.status}`;
      seen[outcome] = (seen[outcome] ?? 0) + 1;
      expect([200, 201, 404]).toContain(put.status);
      // Whichever came first, the content existed when the DELETE came: it is deleted, whole.
      expect(removal.status).toBe(204);
      await expectGone(id);
      expect(await inS3(id)).toEqual({ object: 0, staged: 0, uploads: 0 });
    }
    process.stdout.write(`DELETE racing the last part, ${rounds} rounds: ${JSON.stringify(seen)}\n`);
  });
});
