import { Readable } from 'node:stream';
import { ListMultipartUploadsCommand, ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import type { Db } from 'mongodb';
import type { Logger } from '@cp/logging';
import { Claims } from '../src/store/Claims';
import type { ContentRepository } from '../src/store/ContentRepository';
import type { ObjectStore } from '../src/store/ObjectStore';
import { stagingPrefix, type UploadLedger } from '../src/store/UploadLedger';
import { UploadSweeper } from '../src/sweeper/UploadSweeper';
import type { UploadService } from '../src/uploads/UploadService';
import { useRealStores } from './support/realStores';

/** The expiry sweeper against real FerretDB/MongoDB and S3, with a clock the test moves. */
describe('upload sweeper', () => {
  const ttlMs = 60_000;
  let now = new Date('2026-01-01T00:00:00Z');
  const clock = () => now;
  const stores = useRealStores('sweeper', clock, ttlMs);
  let logger: Logger;
  let db: Db;
  let s3: S3Client;
  let objects: ObjectStore;
  let contents: ContentRepository;
  let uploads: UploadService;
  let ledger: UploadLedger;
  let bucket: string;
  const owner = '0f0e0d0c-0b0a-4909-8807-060504030201';

  beforeAll(() => {
    ({ logger, db, s3, objects, contents, uploads, ledger } = stores);
    bucket = objects.bucket;
  });

  const sweeper = () => new UploadSweeper(contents, uploads, new Claims(db, 'leases'), logger, { intervalMs: 1000, leaseMs: 60_000, batchSize: 100, clock });

  async function startUpload(bytes = 100, total = 300): Promise<string> {
    const outcome = await uploads.write({
      ownerId: owner,
      contentId: null,
      range: { start: 0, end: bytes - 1, total },
      declaredLength: bytes,
      contentType: null,
      body: Readable.from([Buffer.alloc(bytes, 7)]),
    });
    return outcome.id;
  }

  async function openUploads(): Promise<string[]> {
    const out = await s3.send(new ListMultipartUploadsCommand({ Bucket: bucket }));
    return (out.Uploads ?? []).map((u) => u.UploadId!);
  }

  async function stagedKeys(id: string): Promise<string[]> {
    const out = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: stagingPrefix(id) }));
    return (out.Contents ?? []).map((o) => o.Key!);
  }

  it('removes an abandoned upload from S3 and MongoDB and leaves a completed one alone', async () => {
    const abandoned = await startUpload();
    const record = (await contents.find(owner, abandoned))!;
    expect(await stagedKeys(abandoned)).toHaveLength(1);
    expect(await openUploads()).toContain(record.uploadId);
    const done = await uploads.write({
      ownerId: owner,
      contentId: null,
      range: null,
      declaredLength: 5,
      contentType: null,
      body: Readable.from([Buffer.from('hello')]),
    });

    now = new Date(now.getTime() + ttlMs - 1000);
    expect(await sweeper().sweepOnce()).toBe(0); // not expired yet
    expect(await contents.find(owner, abandoned)).not.toBeNull();

    now = new Date(now.getTime() + 2000);
    expect(await sweeper().sweepOnce()).toBe(1);
    expect(await contents.find(owner, abandoned)).toBeNull();
    expect(await stagedKeys(abandoned)).toEqual([]);
    expect(await openUploads()).not.toContain(record.uploadId);

    const kept = (await contents.find(owner, done.id))!;
    expect(kept.state).toBe('ready');
    const stored = await objects.getRange(kept.s3Key, 0, 4);
    const chunks: Buffer[] = [];
    for await (const c of stored.body) chunks.push(c as Buffer);
    expect(Buffer.concat(chunks).toString()).toBe('hello');
  });

  it('finishes the cleanup of a completed content whose own cleanup did not happen, and leaves an unfinished one alone', async () => {
    // a content completed from two staged pieces
    const total = 300;
    const first = await startUpload(100, total);
    const done = await uploads.write({
      ownerId: owner,
      contentId: first,
      range: { start: 100, end: 299, total },
      declaredLength: 200,
      contentType: null,
      body: Readable.from([Buffer.alloc(200, 8)]),
    });
    expect(done.completedNow).toBe(true);
    expect(await stagedKeys(first)).toEqual([]);
    expect(await uploads.pendingCleanups(100)).toEqual([]);
    // as if the completing request had died before its cleanup: a staged object and the note remain
    await objects.putObject(`${stagingPrefix(first)}0-99.left`, Readable.from([Buffer.alloc(100)]), 100, 'application/octet-stream');
    await ledger.noteCleanup(first, total, now);
    // and an unfinished content with a note (a completion that failed and will be tried again)
    const unfinished = await startUpload(100, total);
    await ledger.noteCleanup(unfinished, total, now);

    await sweeper().sweepOnce();
    expect(await stagedKeys(first)).toEqual([]);
    expect(await stagedKeys(unfinished)).toHaveLength(1);
    expect((await uploads.pendingCleanups(100)).map((p) => p._id)).toEqual([unfinished]);
    expect((await contents.find(owner, first))!.state).toBe('ready');
    // once the unfinished one is gone (swept), its note goes with the next sweep
    await uploads.discard((await contents.find(owner, unfinished))!);
    await sweeper().sweepOnce();
    expect(await uploads.pendingCleanups(100)).toEqual([]);
  });

  it('keeps an upload that is still written to: each write moves its expiry a full time to live on', async () => {
    const id = await startUpload(100, 300);
    now = new Date(now.getTime() + ttlMs - 1000);
    await uploads.write({
      ownerId: owner,
      contentId: id,
      range: { start: 100, end: 149, total: 300 },
      declaredLength: 50,
      contentType: null,
      body: Readable.from([Buffer.alloc(50, 1)]),
    });
    now = new Date(now.getTime() + ttlMs - 1000); // long past the first expiry, within the moved one
    expect(await sweeper().sweepOnce()).toBe(0);
    expect((await contents.find(owner, id))!.state).toBe('uploading');
    now = new Date(now.getTime() + 2000);
    expect(await sweeper().sweepOnce()).toBe(1);
    expect(await contents.find(owner, id)).toBeNull();
  });

  it('expires a busy upload all the same twice its time to live after its creation (the S3 lifecycle backstop counts from there)', async () => {
    const created = now.getTime();
    const id = await startUpload(100, 300);
    const writeAt = async (offset: number, a: number) => {
      now = new Date(created + offset);
      await uploads.write({
        ownerId: owner,
        contentId: id,
        range: { start: a, end: a + 49, total: 300 },
        declaredLength: 50,
        contentType: null,
        body: Readable.from([Buffer.alloc(50, 4)]),
      });
    };
    await writeAt(0.9 * ttlMs, 100);
    await writeAt(1.8 * ttlMs, 150);
    expect((await contents.find(owner, id))!.expiresAt.getTime()).toBe(created + 2 * ttlMs);
    now = new Date(created + 2 * ttlMs - 1000);
    expect(await sweeper().sweepOnce()).toBe(0);
    now = new Date(created + 2 * ttlMs + 1000);
    expect(await sweeper().sweepOnce()).toBe(1);
    expect(await contents.find(owner, id)).toBeNull();
  });

  it('refuses a write to an upload past its last possible expiry, even before the sweeper has come by', async () => {
    const created = now.getTime();
    const id = await startUpload(100, 300);
    now = new Date(created + 2 * ttlMs + 1000);
    const late = uploads.write({
      ownerId: owner,
      contentId: id,
      range: { start: 100, end: 149, total: 300 },
      declaredLength: 50,
      contentType: null,
      body: Readable.from([Buffer.alloc(50, 2)]),
    });
    await expect(late).rejects.toMatchObject({ status: 404, code: 'contentNotFound' });
    expect(await stagedKeys(id)).toHaveLength(1); // the first piece only
    expect(await sweeper().sweepOnce()).toBe(1);
  });

  it('makes an expired upload ready instead of removing it when S3 completed it but the completing request died before recording so', async () => {
    const id = await startUpload(100, 300);
    const { objects: store } = stores;
    const complete = store.completeMultipartUpload.bind(store);
    let claimedAt: Date | null = null;
    store.completeMultipartUpload = async (...args) => {
      claimedAt = (await ledger.state(id)).completing;
      await complete(...args);
      throw new Error('the process died here');
    };
    try {
      await expect(
        uploads.write({
          ownerId: owner,
          contentId: id,
          range: { start: 100, end: 299, total: 300 },
          declaredLength: 200,
          contentType: null,
          body: Readable.from([Buffer.alloc(200, 3)]),
        }),
      ).rejects.toThrow('died');
    } finally {
      delete (store as Partial<typeof store>).completeMultipartUpload;
    }
    // a dead process leaves its completion claim behind (the error path above released it)
    await ledger.saveState({ ...(await ledger.state(id)), completing: claimedAt });
    now = new Date(now.getTime() + 2 * ttlMs + 1000);
    expect(await sweeper().sweepOnce()).toBe(0);
    const record = (await contents.find(owner, id))!;
    expect(record.state).toBe('ready');
    expect(record.total).toBe(300);
    expect(await stagedKeys(id)).toEqual([]);
  });

  it('does not remove an upload that was completed, or is being completed, after the sweeper found it expired', async () => {
    const completed = await startUpload(100, 300);
    const completing = await startUpload(100, 300);
    now = new Date(now.getTime() + ttlMs + 1000);
    const found = (await contents.findExpired(now, 100)).map((r) => r._id);
    expect(found).toEqual(expect.arrayContaining([completed, completing]));
    // between the sweeper's query and its removal: one content completed by its last part...
    const done = await uploads.write({
      ownerId: owner,
      contentId: completed,
      range: { start: 100, end: 299, total: 300 },
      declaredLength: 200,
      contentType: null,
      body: Readable.from([Buffer.alloc(200, 3)]),
    });
    expect(done.completedNow).toBe(true);
    // ...and the other one claimed for completion by a request still at work
    await ledger.saveState({ ...(await ledger.state(completing)), completing: now });

    expect(await uploads.expire(completed)).toBe(false);
    expect(await uploads.expire(completing)).toBe(false);
    const kept = (await contents.find(owner, completed))!;
    expect(kept.state).toBe('ready');
    const stored = await objects.getRange(kept.s3Key, 0, 299);
    let bytes = 0;
    for await (const c of stored.body) bytes += (c as Buffer).length;
    expect(bytes).toBe(300);
    expect(await contents.find(owner, completing)).not.toBeNull();
    await uploads.discard((await contents.find(owner, completing))!);
  });

  it('refuses a write that arrives once the sweeper has decided to remove the upload, and keeps none of its bytes', async () => {
    const id = await startUpload(100, 300);
    await ledger.saveState({ ...(await ledger.state(id)), expiring: now });
    const late = uploads.write({
      ownerId: owner,
      contentId: id,
      range: { start: 100, end: 149, total: 300 },
      declaredLength: 50,
      contentType: null,
      body: Readable.from([Buffer.alloc(50, 2)]),
    });
    await expect(late).rejects.toMatchObject({ status: 404, code: 'contentNotFound' });
    expect(await stagedKeys(id)).toHaveLength(1); // the first piece only
    await uploads.discard((await contents.find(owner, id))!);
  });

  it('lets one of two concurrent sweepers do the work, without errors', async () => {
    const ids = [await startUpload(), await startUpload(), await startUpload()];
    now = new Date(now.getTime() + ttlMs + 1000);
    const [a, b] = await Promise.all([sweeper().sweepOnce(), sweeper().sweepOnce()]);
    expect(a + b).toBe(3);
    expect(Math.min(a, b)).toBe(0);
    for (const id of ids) expect(await contents.find(owner, id)).toBeNull();
  });
});
