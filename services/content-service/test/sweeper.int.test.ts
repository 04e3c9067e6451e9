import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { ListMultipartUploadsCommand, ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import type { Logger } from '@cp/logging';
import type { Redis } from '@cp/redis';
import { Registry } from 'prom-client';
import type { ObjectStore } from '../src/store/ObjectStore';
import { RedisLease } from '../src/store/RedisLease';
import type { RedisUploadBook } from '../src/store/RedisUploadBook';
import type { UploadState } from '../src/store/UploadBook';
import { SweeperMetrics } from '../src/sweeper/SweeperMetrics';
import { UploadSweeper } from '../src/sweeper/UploadSweeper';
import type { ExpiringUploads } from '../src/uploads/UploadCleanup';
import { contentKey, stagingPrefix } from '../src/uploads/PartGrid';
import type { UploadService } from '../src/uploads/UploadService';
import { useRealStores } from './support/realStores';

/** The expiry sweeper against real Redis (the upload book, the sweeper's lease) and S3, with a clock the test moves. */
describe('upload sweeper', () => {
  const ttlMs = 60_000;
  let now = new Date('2026-01-01T00:00:00Z');
  const clock = () => now;
  const stores = useRealStores('sweeper', clock, ttlMs);
  let logger: Logger;
  let redis: Redis;
  let s3: S3Client;
  let objects: ObjectStore;
  let uploads: UploadService;
  let book: RedisUploadBook;
  let bucket: string;
  const owner = '0f0e0d0c-0b0a-4909-8807-060504030201';

  beforeAll(() => {
    ({ logger, redis, s3, objects, uploads, book } = stores);
    bucket = objects.bucket;
  });

  const lease = () => new RedisLease(redis, stores.namespace);
  const sweeper = () =>
    new UploadSweeper(book, uploads.expiry, lease(), logger, {
      intervalMs: 1000,
      leaseMs: 60_000,
      batchSize: 100,
      clock,
    });

  /** Forces an upload's state (a commit from the version just read), as a request elsewhere would have left it. */
  async function forceState(id: string, change: Partial<UploadState>): Promise<void> {
    expect(await book.commit({ ...(await book.state(id)), ...change }, [])).toBe(true);
  }

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

  it('removes an abandoned upload from S3 and Redis and leaves a completed one alone', async () => {
    const abandoned = await startUpload();
    const record = (await book.find(abandoned))!;
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
    expect(await stores.lookup(owner, abandoned)).toMatchObject({ state: 'uploading' });

    now = new Date(now.getTime() + 2000);
    expect(await sweeper().sweepOnce()).toBe(1);
    expect(await stores.lookup(owner, abandoned)).toBeNull();
    expect(await book.state(abandoned)).toMatchObject({ version: 0 });
    expect(await book.expired(now, 100)).not.toContain(abandoned);
    expect(await stagedKeys(abandoned)).toEqual([]);
    expect(await openUploads()).not.toContain(record.uploadId);

    expect(await stores.lookup(owner, done.id)).toMatchObject({ state: 'ready', total: 5 });
    const stored = await objects.getRange(contentKey(owner, done.id), 0, 4);
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
    expect(await uploads.expiry.pendingCleanups(100)).toEqual([]);
    // as if the completing request had died before its cleanup: a staged object and the note remain
    await objects.putObject(
      `${stagingPrefix(first)}0-99.left`,
      Readable.from([Buffer.alloc(100)]),
      100,
      'application/octet-stream',
    );
    await book.noteCleanup(first, now);
    // and an unfinished content with a note (a completion that failed and will be tried again)
    const unfinished = await startUpload(100, total);
    await book.noteCleanup(unfinished, now);
    expect((await uploads.expiry.pendingCleanups(100)).sort()).toEqual([first, unfinished].sort()); // noted at the same time: either first

    await sweeper().sweepOnce();
    expect(await stagedKeys(first)).toEqual([]);
    expect(await stagedKeys(unfinished)).toHaveLength(1);
    expect(await uploads.expiry.pendingCleanups(100)).toEqual([unfinished]);
    expect(await stores.lookup(owner, first)).toMatchObject({ state: 'ready', total });
    expect(await stores.lookup(owner, unfinished)).toMatchObject({ state: 'uploading' });
    // once the unfinished one is gone (swept), its note goes with the next sweep
    await uploads.discard((await book.find(unfinished))!);
    await sweeper().sweepOnce();
    expect(await uploads.expiry.pendingCleanups(100)).toEqual([]);
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
    expect(await stores.lookup(owner, id)).toMatchObject({ state: 'uploading' });
    now = new Date(now.getTime() + 2000);
    expect(await sweeper().sweepOnce()).toBe(1);
    expect(await stores.lookup(owner, id)).toBeNull();
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
    expect((await book.find(id))!.expiresAt.getTime()).toBe(created + 2 * ttlMs);
    now = new Date(created + 2 * ttlMs - 1000);
    expect(await sweeper().sweepOnce()).toBe(0);
    now = new Date(created + 2 * ttlMs + 1000);
    expect(await sweeper().sweepOnce()).toBe(1);
    expect(await stores.lookup(owner, id)).toBeNull();
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

  it('keeps an expired upload that S3 completed as its content when the completing request died before it could clean up', async () => {
    const id = await startUpload(100, 300);
    const { objects: store } = stores;
    const complete = store.completeMultipartUpload.bind(store);
    let claimed: Pick<UploadState, 'completing' | 'completingBy'> | null = null;
    store.completeMultipartUpload = async (...args) => {
      const { completing, completingBy } = await book.state(id);
      claimed = { completing, completingBy };
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
    expect(claimed!.completing).not.toBeNull();
    // a dead process leaves its completion claim behind (the error path above released it)
    await forceState(id, claimed!);
    expect(await uploads.expiry.pendingCleanups(100)).toContain(id); // noted before S3 completed
    now = new Date(now.getTime() + 2 * ttlMs + 1000);
    expect(await sweeper().sweepOnce()).toBe(0);
    expect(await stores.lookup(owner, id)).toMatchObject({ state: 'ready', total: 300 });
    expect(await book.find(id)).toBeNull();
    expect(await book.expired(now, 100)).not.toContain(id);
    expect(await uploads.expiry.pendingCleanups(100)).not.toContain(id);
    expect(await stagedKeys(id)).toEqual([]);
  });

  it('does not remove an upload that was completed, or is being completed, after the sweeper found it expired', async () => {
    const completed = await startUpload(100, 300);
    const completing = await startUpload(100, 300);
    now = new Date(now.getTime() + ttlMs + 1000);
    const found = await book.expired(now, 100);
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
    await forceState(completing, { completing: now, completingBy: 'a-request-at-work' });

    expect(await uploads.expire(completed)).toBe(false);
    expect(await uploads.expire(completing)).toBe(false);
    expect(await stores.lookup(owner, completed)).toMatchObject({ state: 'ready', total: 300 });
    const stored = await objects.getRange(contentKey(owner, completed), 0, 299);
    let bytes = 0;
    for await (const c of stored.body) bytes += (c as Buffer).length;
    expect(bytes).toBe(300);
    expect(await stores.lookup(owner, completing)).toMatchObject({ state: 'uploading' });
    expect((await book.state(completing)).expiring ?? null).toBeNull(); // not marked for removal either
    await uploads.discard((await book.find(completing))!);
  });

  it('refuses a write that arrives once the sweeper has decided to remove the upload, and keeps none of its bytes', async () => {
    const id = await startUpload(100, 300);
    await forceState(id, { expiring: now });
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
    await uploads.discard((await book.find(id))!);
  });

  it('lets one of two concurrent sweepers do the work, without errors', async () => {
    const ids = [await startUpload(), await startUpload(), await startUpload()];
    now = new Date(now.getTime() + ttlMs + 1000);
    const [a, b] = await Promise.all([sweeper().sweepOnce(), sweeper().sweepOnce()]);
    expect(a + b).toBe(3);
    expect(Math.min(a, b)).toBe(0);
    for (const id of ids) expect(await stores.lookup(owner, id)).toBeNull();
  });

  it('sweeps nothing while another holds the lease, and again once it is released', async () => {
    const id = await startUpload();
    now = new Date(now.getTime() + ttlMs + 1000);
    const other = await lease().acquire('upload-sweeper', 60_000);
    expect(other).not.toBeNull();
    expect(await sweeper().sweepOnce()).toBe(0);
    expect(await stores.lookup(owner, id)).toMatchObject({ state: 'uploading' });
    await lease().release('upload-sweeper', other!);
    expect(await sweeper().sweepOnce()).toBe(1);
    expect(await stores.lookup(owner, id)).toBeNull();
  });

  it('reports when it last finished a pass: not while another holds the lease, nor when an upload could not go', async () => {
    const registry = new Registry();
    const metrics = new SweeperMetrics(registry, 300);
    const last = async () =>
      Number(
        /^content_sweeper_last_success_timestamp_seconds\S* (\S+)$/m.exec(await registry.metrics())?.[1] ?? Number.NaN,
      );
    const withMetrics = (expiry: ExpiringUploads = uploads.expiry) =>
      new UploadSweeper(book, expiry, lease(), logger, {
        intervalMs: 1000,
        leaseMs: 60_000,
        batchSize: 100,
        clock,
        metrics,
      });
    const id = await startUpload();
    now = new Date(now.getTime() + ttlMs + 1000);
    const s3Refuses: ExpiringUploads = Object.assign(Object.create(uploads.expiry) as ExpiringUploads, {
      expire: async () => {
        throw new Error('S3 refused');
      },
    });
    expect(await withMetrics(s3Refuses).sweepOnce()).toBe(0);
    expect(await last()).toBe(0);
    const other = await lease().acquire('upload-sweeper', 60_000);
    expect(await withMetrics().sweepOnce()).toBe(0);
    expect(await last()).toBe(0);
    await lease().release('upload-sweeper', other!);
    expect(await withMetrics().sweepOnce()).toBeGreaterThanOrEqual(1);
    expect(await stores.lookup(owner, id)).toBeNull();
    expect(await last()).toBe(now.getTime() / 1000);
    expect(await registry.metrics()).toMatch(/^content_sweeper_interval_seconds 300$/m);
  });

  it('holds the sweeper lease for one holder at a time: renewed and released by its holder only, and free once it runs out', async () => {
    const name = `lease-test-${Date.now()}`;
    const a = await lease().acquire(name, 1_000);
    expect(a).not.toBeNull();
    expect(await lease().acquire(name, 1_000)).toBeNull();
    expect(await lease().renew(name, 'not-the-holder', 60_000)).toBe(false);
    await lease().release(name, 'not-the-holder');
    expect(await lease().acquire(name, 1_000)).toBeNull(); // still a's
    await sleep(600);
    expect(await lease().renew(name, a!, 1_000)).toBe(true);
    await sleep(600); // past the first lease, within the renewed one
    expect(await lease().acquire(name, 1_000)).toBeNull();
    await sleep(1_000); // a stopped renewing: the lease runs out
    const b = await lease().acquire(name, 60_000);
    expect(b).not.toBeNull();
    expect(await lease().renew(name, a!, 60_000)).toBe(false); // a no longer holds it
    await lease().release(name, a!);
    expect(await lease().acquire(name, 60_000)).toBeNull(); // a's release does not free b's lease
    await lease().release(name, b!);
    expect(await lease().acquire(name, 60_000)).not.toBeNull();
  });
});
