import { Readable } from 'node:stream';
import { ListMultipartUploadsCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { useRealStores } from './support/realStores';

/** Completion and retries around it against real FerretDB/MongoDB and S3: parts in doubt, failed completions, pieces spanning parts. */
describe('completion', () => {
  const stores = useRealStores('completion', () => new Date());
  const owner = '0f0e0d0c-0b0a-4909-8807-060504030201';
  const P = 64 * 1024 * 1024;

  const MiB = 1024 * 1024;
  const put = (contentId: string | null, start: number, bytes: Buffer, total: number) =>
    stores.uploads.write({
      ownerId: owner,
      contentId,
      range: { start, end: start + bytes.length - 1, total },
      declaredLength: bytes.length,
      contentType: null,
      body: Readable.from([bytes]),
    });

  async function bytesOf(key: string, a: number, b: number): Promise<Buffer> {
    const stored = await stores.objects.getRange(key, a, b);
    const chunks: Buffer[] = [];
    for await (const c of stored.body) chunks.push(c as Buffer);
    return Buffer.concat(chunks);
  }

  it('drops a part whose bytes in S3 are not the recorded ones instead of failing, and completes once it is sent again', async () => {
    const total = P + 10;
    const tail = Buffer.alloc(10, 1);
    const created = await stores.uploads.write({
      ownerId: owner,
      contentId: null,
      range: { start: P, end: P + 9, total },
      declaredLength: 10,
      contentType: null,
      body: Readable.from([tail]),
    });
    const record = (await stores.contents.find(owner, created.id))!;
    // as if a later rewrite of part 2 had reached S3 and then failed before it was recorded
    await stores.objects.uploadPart(record.s3Key, record.uploadId!, 2, Readable.from([Buffer.alloc(10, 9)]), 10);

    const head = Buffer.alloc(P, 2);
    const last = await stores.uploads.write({
      ownerId: owner,
      contentId: created.id,
      range: { start: 0, end: P - 1, total },
      declaredLength: P,
      contentType: null,
      body: Readable.from([head]),
    });
    expect(last.completedNow).toBe(false);
    expect((await stores.contents.find(owner, created.id))!.state).toBe('uploading');
    expect(await stores.uploads.received(record)).toEqual({ total, ranges: [{ a: 0, b: P - 1 }] });

    const again = await stores.uploads.write({
      ownerId: owner,
      contentId: created.id,
      range: { start: P, end: P + 9, total },
      declaredLength: 10,
      contentType: null,
      body: Readable.from([tail]),
    });
    expect(again.completedNow).toBe(true);
    const ready = (await stores.contents.find(owner, created.id))!;
    expect(ready.state).toBe('ready');
    expect(await bytesOf(ready.s3Key, P - 2, P + 9)).toEqual(Buffer.concat([Buffer.alloc(2, 2), tail]));
  });

  it('refuses other bytes for a piece that spans a stored part and one still filling, so the content never mixes them', async () => {
    const total = P + 2 * MiB;
    const spanning = Buffer.alloc(2 * MiB, 5); // bytes P-1MiB .. P+1MiB-1: the end of part 1 and the start of part 2
    const created = await put(null, 0, Buffer.alloc(P - MiB, 4), total);
    expect((await put(created.id, P - MiB, spanning, total)).completedNow).toBe(false); // part 1 assembled, part 2 not yet covered
    await expect(put(created.id, P - MiB, Buffer.alloc(2 * MiB, 6), total)).rejects.toMatchObject({ status: 409, code: 'rangeAlreadyStored' });
    expect((await put(created.id, P - MiB, spanning, total)).completedNow).toBe(false); // the same bytes again: a harmless retry
    expect((await put(created.id, P + MiB, Buffer.alloc(MiB, 7), total)).completedNow).toBe(true);
    const ready = (await stores.contents.find(owner, created.id))!;
    expect((await bytesOf(ready.s3Key, P - MiB, P + MiB - 1)).equals(spanning)).toBe(true); // (toEqual takes seconds on MiBs)
  });

  it('lets a retry of the last piece complete the content after the completion it triggered failed', async () => {
    const total = 3 * MiB;
    const created = await put(null, 0, Buffer.alloc(2 * MiB, 1), total);
    const { objects } = stores;
    objects.completeMultipartUpload = async () => {
      throw new Error('S3 answered 500');
    };
    try {
      await expect(put(created.id, 2 * MiB, Buffer.alloc(MiB, 2), total)).rejects.toThrow('S3 answered 500');
    } finally {
      delete (objects as Partial<typeof objects>).completeMultipartUpload; // the prototype's again
    }
    const retried = await put(created.id, 2 * MiB, Buffer.alloc(MiB, 2), total);
    expect(retried.completedNow).toBe(true);
    expect((await stores.contents.find(owner, created.id))!.state).toBe('ready');
  });

  it('answers a range that raced its content to completion like a write to the ready content, and brings back no bookkeeping', async () => {
    const total = 3 * MiB;
    const last = Buffer.alloc(MiB, 9);
    const created = await put(null, 0, Buffer.alloc(2 * MiB, 8), total);
    const stale = (await stores.contents.find(owner, created.id))!; // as a slow request read it, before...
    expect((await put(created.id, 2 * MiB, last, total)).completedNow).toBe(true); // ...another one completed the content
    const { contents } = stores;
    // The write path reads records through findUploading (a cache of recent ones, as stale as this).
    const staleOnce = async () => {
      delete (contents as Partial<typeof contents>).findUploading;
      return stale;
    };
    contents.findUploading = staleOnce;
    expect(await put(created.id, 2 * MiB, last, total)).toEqual({ id: created.id, completedNow: false, completed: true });
    contents.findUploading = staleOnce;
    await expect(put(created.id, 2 * MiB, Buffer.alloc(MiB, 1), total)).rejects.toMatchObject({ status: 409, code: 'contentAlreadyComplete' });
    expect((await stores.ledger.state(created.id)).lastByte).toBe(-1); // no bookkeeping brought back
    const staged = await stores.objects.deletePrefix(`staging/${created.id}/`);
    expect(staged).toBe(0); // and no staged copy left
  });

  it('leaves no object and no open upload behind when the new content cannot be recorded', async () => {
    const lonely = '5f0e0d0c-0b0a-4909-8807-060504030201';
    const { contents, objects, s3 } = stores;
    const failOnce = async () => {
      delete (contents as Partial<typeof contents>).insert;
      throw new Error('database went away');
    };
    const send = (range: { start: number; end: number; total: number } | null) =>
      stores.uploads.write({ ownerId: lonely, contentId: null, range, declaredLength: 100, contentType: null, body: Readable.from([Buffer.alloc(100, 1)]) });
    contents.insert = failOnce;
    await expect(send(null)).rejects.toThrow('database went away'); // one-shot: PutObject, then the record
    contents.insert = failOnce;
    await expect(send({ start: 0, end: 99, total: 300 })).rejects.toThrow('database went away'); // multipart: CreateMultipartUpload, then the record
    const prefix = `contents/${lonely}/`;
    expect((await s3.send(new ListObjectsV2Command({ Bucket: objects.bucket, Prefix: prefix }))).Contents ?? []).toEqual([]);
    expect((await s3.send(new ListMultipartUploadsCommand({ Bucket: objects.bucket, Prefix: prefix }))).Uploads ?? []).toEqual([]);
  });

  it('lets one request at a time write into an S3 part: others get 503 while it streams, and a failed write gives the part back', async () => {
    const total = P + 10;
    const created = await put(null, 0, Buffer.alloc(100, 1), total); // a staged piece of part 1
    const { ledger } = stores;
    const claimBy = async (k: number, by: string | null) =>
      ledger.savePart({ ...(await ledger.part(created.id, k)), writing: by ? { since: new Date(), by } : null });

    await claimBy(2, 'another-request'); // an aligned write of part 2 (the final one) under way elsewhere
    await expect(put(created.id, P, Buffer.alloc(10, 2), total)).rejects.toMatchObject({ status: 503, code: 'partWriting' });
    await claimBy(1, 'another-request');
    await expect(put(created.id, 100, Buffer.alloc(100, 2), total)).rejects.toMatchObject({ status: 503, code: 'partWriting' }); // staged pieces wait too
    await claimBy(1, null);
    await claimBy(2, null);

    // a body that ends short fails the S3 write; the claim goes with it
    const short = stores.uploads.write({
      ownerId: owner,
      contentId: created.id,
      range: { start: P, end: P + 9, total },
      declaredLength: null,
      contentType: null,
      body: Readable.from([Buffer.alloc(5, 3)]),
    });
    await expect(short).rejects.toThrow();
    expect((await ledger.part(created.id, 2)).writing ?? null).toBeNull();
    expect((await put(created.id, P, Buffer.alloc(10, 2), total)).completedNow).toBe(false);
    expect((await ledger.state(created.id)).parts.p2).toMatchObject({ size: 10 });
  });

  it('answers the chunk that covers a part before its assembly, and gives the chunk with the last bytes the 201 once every part is stored', async () => {
    const total = P + MiB;
    const chunk = (i: number) => Buffer.alloc(MiB, i % 251);
    const created = await put(null, 0, chunk(0), total);
    const answers: boolean[] = [];
    for (let i = 1; i < 64; i++) answers.push((await put(created.id, i * MiB, chunk(i), total)).completedNow);
    // The 64th chunk covered part 1: its assembly runs after the answer.
    expect(stores.uploads.background.size).toBe(1);
    expect((await stores.ledger.state(created.id)).parts.p1).toBeUndefined();
    answers.push((await put(created.id, 64 * MiB, chunk(64), total)).completedNow);
    expect(answers.filter(Boolean)).toHaveLength(1);
    expect(answers[answers.length - 1]).toBe(true);
    const ready = (await stores.contents.find(owner, created.id))!;
    expect(ready).toMatchObject({ state: 'ready', total });
  });
});
