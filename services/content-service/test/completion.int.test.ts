import { Readable } from 'node:stream';
import { useRealStores } from './support/realStores';

/** Completion against real FerretDB/MongoDB and S3 when S3 holds other bytes for a part than recorded. */
describe('completion', () => {
  const stores = useRealStores('completion', () => new Date());
  const owner = '0f0e0d0c-0b0a-4909-8807-060504030201';
  const P = 64 * 1024 * 1024;

  async function bytesOf(key: string, a: number, b: number): Promise<Buffer> {
    const stored = await stores.objects.getRange(key, a, b);
    const chunks: Buffer[] = [];
    for await (const c of stored.body) chunks.push(c as Buffer);
    return Buffer.concat(chunks);
  }

  it('drops a part whose bytes in S3 are not the recorded ones instead of failing, and completes once it is sent again', async () => {
    const total = P + 10;
    const tail = Buffer.alloc(10, 1);
    const created = await stores.uploads.write({ ownerId: owner, contentId: null, range: { start: P, end: P + 9, total }, declaredLength: 10, contentType: null, body: Readable.from([tail]) });
    const record = (await stores.contents.find(owner, created.id))!;
    // as if a later rewrite of part 2 had reached S3 and then failed before it was recorded
    await stores.objects.uploadPart(record.s3Key, record.uploadId!, 2, Readable.from([Buffer.alloc(10, 9)]), 10);

    const head = Buffer.alloc(P, 2);
    const last = await stores.uploads.write({ ownerId: owner, contentId: created.id, range: { start: 0, end: P - 1, total }, declaredLength: P, contentType: null, body: Readable.from([head]) });
    expect(last.completedNow).toBe(false);
    expect((await stores.contents.find(owner, created.id))!.state).toBe('uploading');
    expect(await stores.uploads.received(record)).toEqual({ total, ranges: [{ a: 0, b: P - 1 }] });

    const again = await stores.uploads.write({ ownerId: owner, contentId: created.id, range: { start: P, end: P + 9, total }, declaredLength: 10, contentType: null, body: Readable.from([tail]) });
    expect(again.completedNow).toBe(true);
    const ready = (await stores.contents.find(owner, created.id))!;
    expect(ready.state).toBe('ready');
    expect(await bytesOf(ready.s3Key, P - 2, P + 9)).toEqual(Buffer.concat([Buffer.alloc(2, 2), tail]));
  });
});
