import { Readable } from 'node:stream';
import { ListMultipartUploadsCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import type { PartRanges } from '../src/store/UploadBook';
import { contentKey } from '../src/uploads/PartGrid';
import { useRealStores } from './support/realStores';

/** Completion and retries around it against real Redis (the upload book) and S3: parts in doubt, failed completions, pieces spanning parts. */
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
    const record = (await stores.book.find(created.id))!;
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
    expect(await stores.lookup(owner, created.id)).toMatchObject({ state: 'uploading' });
    expect(await stores.uploads.status.received(record)).toEqual({ total, ranges: [{ a: 0, b: P - 1 }] });

    const again = await stores.uploads.write({
      ownerId: owner,
      contentId: created.id,
      range: { start: P, end: P + 9, total },
      declaredLength: 10,
      contentType: null,
      body: Readable.from([tail]),
    });
    expect(again.completedNow).toBe(true);
    expect(await stores.lookup(owner, created.id)).toMatchObject({ state: 'ready', total });
    expect(await stores.book.find(created.id)).toBeNull(); // a finished content has no entry in the book
    expect(await bytesOf(contentKey(owner, created.id), P - 2, P + 9)).toEqual(
      Buffer.concat([Buffer.alloc(2, 2), tail]),
    );
  });

  it('refuses other bytes for a piece that spans a stored part and one still filling, so the content never mixes them', async () => {
    const total = P + 2 * MiB;
    const spanning = Buffer.alloc(2 * MiB, 5); // bytes P-1MiB .. P+1MiB-1: the end of part 1 and the start of part 2
    const created = await put(null, 0, Buffer.alloc(P - MiB, 4), total);
    expect((await put(created.id, P - MiB, spanning, total)).completedNow).toBe(false); // part 1 assembled, part 2 not yet covered
    await expect(put(created.id, P - MiB, Buffer.alloc(2 * MiB, 6), total)).rejects.toMatchObject({
      status: 409,
      code: 'rangeAlreadyStored',
    });
    expect((await put(created.id, P - MiB, spanning, total)).completedNow).toBe(false); // the same bytes again: a harmless retry
    expect((await put(created.id, P + MiB, Buffer.alloc(MiB, 7), total)).completedNow).toBe(true);
    expect(await stores.lookup(owner, created.id)).toMatchObject({ state: 'ready', total });
    expect((await bytesOf(contentKey(owner, created.id), P - MiB, P + MiB - 1)).equals(spanning)).toBe(true); // (toEqual takes seconds on MiBs)
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
    expect(await stores.lookup(owner, created.id)).toMatchObject({ state: 'ready', total });
  });

  it('lets the retry of a part through once a holder that completed the content in S3 died before cleaning up', async () => {
    const total = P + 10;
    const head = Buffer.alloc(P, 3);
    const created = await put(null, P, Buffer.alloc(10, 4), total);
    const { objects } = stores;
    const complete = objects.completeMultipartUpload.bind(objects);
    // S3 completes the content; its holder dies before it records anything (its claim is let go).
    objects.completeMultipartUpload = async (...args) => {
      await complete(...args);
      throw new Error('the process died');
    };
    try {
      await expect(put(created.id, 0, head, total)).rejects.toThrow('the process died');
    } finally {
      delete (objects as Partial<typeof objects>).completeMultipartUpload;
    }
    expect(await stores.book.find(created.id)).not.toBeNull();
    // The retry's UploadPart finds no upload (S3 completed it): the content is ready, not lost.
    await expect(put(created.id, 0, head, total)).rejects.toMatchObject({ status: 503, code: 'contentCompleting' });
    expect(await stores.book.find(created.id)).toBeNull();
    const again = await put(created.id, 0, head, total);
    expect(again.completed).toBe(true);
    expect(await stores.lookup(owner, created.id)).toMatchObject({ state: 'ready', total });
  });

  it('answers a range that raced its content to completion like a write to the ready content, and brings back no bookkeeping', async () => {
    const total = 3 * MiB;
    const last = Buffer.alloc(MiB, 9);
    const created = await put(null, 0, Buffer.alloc(2 * MiB, 8), total);
    const stale = (await stores.book.find(created.id))!; // as a slow request read it, before...
    expect((await put(created.id, 2 * MiB, last, total)).completedNow).toBe(true); // ...another one completed the content
    const { book } = stores;
    // The write path reads the upload's record first: here as stale as that slow request's.
    const staleOnce = async () => {
      delete (book as Partial<typeof book>).find;
      return structuredClone(stale);
    };
    book.find = staleOnce;
    expect(await put(created.id, 2 * MiB, last, total)).toEqual({
      id: created.id,
      completedNow: false,
      completed: true,
    });
    book.find = staleOnce;
    await expect(put(created.id, 2 * MiB, Buffer.alloc(MiB, 1), total)).rejects.toMatchObject({
      status: 409,
      code: 'contentAlreadyComplete',
    });
    expect(await book.state(created.id)).toMatchObject({ version: 0, lastByte: -1 }); // no bookkeeping brought back
    expect(await book.find(created.id)).toBeNull();
    expect(await stores.lookup(owner, created.id)).toMatchObject({ state: 'ready', total });
    const staged = await stores.objects.deletePrefix(`staging/${created.id}/`);
    expect(staged).toBe(0); // and no staged copy left
  });

  it('leaves no object, no open upload and no record behind when a new content cannot be stored or recorded', async () => {
    const lonely = '5f0e0d0c-0b0a-4909-8807-060504030201';
    const { book, objects, s3 } = stores;
    const send = (range: { start: number; end: number; total: number } | null, body: Buffer) =>
      stores.uploads.write({
        ownerId: lonely,
        contentId: null,
        range,
        declaredLength: 100,
        contentType: null,
        body: Readable.from([body]),
      });
    // One-shot: the object is the content's only record; a body that ends short leaves none.
    await expect(send(null, Buffer.alloc(60, 1))).rejects.toThrow();
    // Multipart: CreateMultipartUpload, then the record, which fails here: the S3 upload is aborted.
    const created: string[] = [];
    const failOnce = async (record: { _id: string }) => {
      delete (book as Partial<typeof book>).create;
      created.push(record._id);
      throw new Error('redis went away');
    };
    book.create = failOnce;
    await expect(send({ start: 0, end: 99, total: 300 }, Buffer.alloc(100, 1))).rejects.toThrow('redis went away');
    // Multipart, recorded, but its first range fails: the upload is discarded with its record.
    const spy = jest.spyOn(book, 'create');
    await expect(send({ start: 0, end: 99, total: 300 }, Buffer.alloc(60, 1))).rejects.toThrow();
    created.push(...spy.mock.calls.map(([record]) => record._id));
    spy.mockRestore();
    expect(created).toHaveLength(2);
    for (const id of created) {
      expect(await book.find(id)).toBeNull();
      expect((await book.state(id)).version).toBe(0);
    }
    const prefix = `contents/${lonely}/`;
    expect(
      (await s3.send(new ListObjectsV2Command({ Bucket: objects.bucket, Prefix: prefix }))).Contents ?? [],
    ).toEqual([]);
    expect(
      (await s3.send(new ListMultipartUploadsCommand({ Bucket: objects.bucket, Prefix: prefix }))).Uploads ?? [],
    ).toEqual([]);
    for (const id of created)
      expect(
        (await s3.send(new ListObjectsV2Command({ Bucket: objects.bucket, Prefix: `staging/${id}/` }))).Contents ?? [],
      ).toEqual([]);
  });

  it('lets one request at a time write into an S3 part: others get 503 while it streams, and a failed write gives the part back', async () => {
    const total = P + 10;
    const created = await put(null, 0, Buffer.alloc(100, 1), total); // a staged piece of part 1
    const { book } = stores;
    /** Sets who writes part k, as a request's claim in the book (a commit from the version just read). */
    const claimBy = async (k: number, by: string | null) => {
      const state = await book.state(created.id);
      const part: PartRanges = await book.part(created.id, k, state.version);
      expect(await book.commit(state, [{ ...part, writing: by ? { since: new Date(), by } : null }])).toBe(true);
    };

    await claimBy(2, 'another-request'); // an aligned write of part 2 (the final one) under way elsewhere
    await expect(put(created.id, P, Buffer.alloc(10, 2), total)).rejects.toMatchObject({
      status: 503,
      code: 'partWriting',
    });
    await claimBy(1, 'another-request');
    await expect(put(created.id, 100, Buffer.alloc(100, 2), total)).rejects.toMatchObject({
      status: 503,
      code: 'partWriting',
    }); // staged pieces wait too
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
    expect((await book.part(created.id, 2)).writing ?? null).toBeNull();
    expect((await put(created.id, P, Buffer.alloc(10, 2), total)).completedNow).toBe(false);
    expect((await book.state(created.id)).parts.p2).toMatchObject({ size: 10 });
  });

  it('answers the chunk that covers a part before its assembly, and gives the chunk with the last bytes the 201 once every part is stored', async () => {
    const total = P + MiB;
    const chunk = (i: number) => Buffer.alloc(MiB, i % 251);
    const created = await put(null, 0, chunk(0), total);
    const answers: boolean[] = [];
    for (let i = 1; i < 64; i++) answers.push((await put(created.id, i * MiB, chunk(i), total)).completedNow);
    // The 64th chunk covered part 1: its assembly runs after the answer.
    expect(stores.uploads.background.size).toBe(1);
    expect((await stores.book.state(created.id)).parts.p1).toBeUndefined();
    answers.push((await put(created.id, 64 * MiB, chunk(64), total)).completedNow);
    expect(answers.filter(Boolean)).toHaveLength(1);
    expect(answers[answers.length - 1]).toBe(true);
    expect(await stores.lookup(owner, created.id)).toMatchObject({ state: 'ready', total });
    expect(await stores.book.find(created.id)).toBeNull();
  });
});
