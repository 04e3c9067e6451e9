import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { ServiceError } from '@cp/errors';
import { closeRedis, connectRedis, type Redis } from '@cp/redis';
import { BookCommits, type BookView } from '../src/uploads/BookCommits';
import { RedisUploadBook } from '../src/store/RedisUploadBook';
import { StaleBookRead, type PartRanges, type UploadRecord } from '../src/store/UploadBook';
import { contentKey } from '../src/uploads/PartGrid';
import { PartAssembler } from '../src/uploads/PartAssembler';
import { UploadService } from '../src/uploads/UploadService';
import { redisReady, useRealStores } from './support/realStores';

/** Claims held by two holders (as two replicas) against the real Redis book and S3: leases, renewal, fencing by version. */
describe('fenced claims', () => {
  const stores = useRealStores('fenced-claims', () => new Date());
  const owner = '1f0e0d0c-0b0a-4909-8807-060504030201';
  const P = 64 * 1024 * 1024;
  /** Another replica's connection to the same Redis. */
  let elsewhere: Redis;

  beforeAll(async () => {
    elsewhere = connectRedis(process.env.REDIS_URL!, stores.logger, { commandTimeoutMs: 5_000 });
    await redisReady(elsewhere);
  });

  afterAll(async () => {
    await closeRedis(elsewhere);
  });

  /** The book as another replica sees it: the same namespace, over a connection of its own. */
  const otherBook = () => new RedisUploadBook(elsewhere, stores.namespace);

  /** Another replica's UploadService on the same Redis namespace and bucket. */
  const replica = (leaseMs: number) =>
    new UploadService(
      {
        book: otherBook(),
        objects: stores.objects,
        assembler: new PartAssembler(stores.objects),
        logger: stores.logger,
      },
      { uploadTtlMs: 60_000, completionLeaseMs: leaseMs, assemblyLeaseMs: leaseMs },
    );

  const put = (
    uploads: UploadService,
    contentId: string | null,
    start: number,
    body: Readable | Buffer,
    length: number,
    total: number,
  ) =>
    uploads.write({
      ownerId: owner,
      contentId,
      range: { start, end: start + length - 1, total },
      declaredLength: length,
      contentType: null,
      body: Buffer.isBuffer(body) ? Readable.from([body]) : body,
    });

  /** An upload in the book (no S3 upload behind it: these tests are about the bookkeeping). */
  async function bookedUpload(id: string): Promise<UploadRecord> {
    const record: UploadRecord = {
      _id: id,
      ownerId: owner,
      total: P,
      contentType: 'application/octet-stream',
      s3Key: contentKey(owner, id),
      uploadId: 'none',
      uploader: null,
      createdAt: new Date(),
      expiresAt: new Date(Date.now() + 60_000),
    };
    await stores.book.create(record);
    return record;
  }

  /** Changes part k in the book as another request would (compare-and-set from the version read, again when it lost). */
  async function setPart(id: string, k: number, change: (part: PartRanges) => PartRanges): Promise<void> {
    for (let attempt = 0; attempt < 20; attempt++) {
      const state = await stores.book.state(id);
      try {
        const part = await stores.book.part(id, k, state.version);
        if (await stores.book.commit(state, [change(part)])) return;
      } catch (error) {
        if (!(error instanceof StaleBookRead)) throw error;
      }
    }
    throw new Error(`could not change part ${k} of ${id}`);
  }

  it('refuses the commit of a holder paused past its lease once another took its claim over, and keeps the successor’s bookkeeping', async () => {
    const leaseMs = 500;
    const id = 'fence-0000-0000-0000-000000000001';
    await bookedUpload(id);
    // Two processes, each with its own book and commits over its own connection.
    const a = new BookCommits(new RedisUploadBook(stores.redis, stores.namespace));
    const b = new BookCommits(otherBook());
    const claim = (by: string) => async (view: BookView) => {
      const part = await view.part(1);
      if (part.writing && part.writing.by !== by && Date.now() - part.writing.since.getTime() < leaseMs)
        throw ServiceError.of('partWriting', 'held');
      part.writing = { since: new Date(), by };
    };
    const record = (by: string, etag: string) => async (view: BookView) => {
      const part = await view.part(1);
      if (part.writing?.by !== by) throw ServiceError.of('claimLost', `${by} no longer holds part 1`);
      part.writing = null;
      part.stored = true;
      view.state.parts.p1 = { etag, size: P };
    };

    await a.commit(id, claim('A'));
    // A computes the commit that records its part from the version it read, and stalls, past every lease.
    let resume!: () => void;
    const paused = new Promise<void>((r) => (resume = r));
    const computedFrom: number[] = [];
    const aCommit = a.commit(id, async (view) => {
      computedFrom.push(view.state.version);
      await view.part(1); // read as of its version, before the pause: only the compare-and-set can tell
      if (computedFrom.length === 1) await paused;
      await record('A', 'etag-A')(view);
    });
    await sleep(3 * leaseMs);
    // B finds A's part claim run out, takes it over, and records its own write.
    await b.commit(id, claim('B'));
    await b.commit(id, record('B', 'etag-B'));
    resume();
    // A's commit from its old version is refused; computed again from the latest, it finds its claim lost.
    await expect(aCommit).rejects.toMatchObject({ code: 'claimLost' });
    expect(computedFrom).toHaveLength(2);
    expect(computedFrom[1]).toBe(computedFrom[0]! + 2);
    const state = await stores.book.state(id);
    expect(state.parts.p1).toEqual({ etag: 'etag-B', size: P });
    expect((await stores.book.part(id, 1)).writing ?? null).toBeNull();
  });

  it('lets exactly one of many writers computing from the same version commit, across connections', async () => {
    const id = 'fence-0000-0000-0000-000000000002';
    await bookedUpload(id);
    const books = [stores.book, otherBook()];
    const base = await stores.book.state(id);
    const wins = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        books[i % 2]!.commit({ ...structuredClone(base), parts: { p1: { etag: `e${i}`, size: 1 } } }, []),
      ),
    );
    expect(wins.filter(Boolean)).toHaveLength(1);
    const winner = wins.indexOf(true);
    expect(await stores.book.state(id)).toMatchObject({
      version: base.version + 1,
      parts: { p1: { etag: `e${winner}`, size: 1 } },
    });
  });

  it('refuses a writer far behind, and shows every reader the latest version', async () => {
    const id = 'fence-0000-0000-0000-000000000004';
    await bookedUpload(id);
    const a = stores.book;
    const b = otherBook(); // another process
    expect(await a.commit({ ...(await a.state(id)), lastByte: 0 }, [])).toBe(true);
    const behind = await b.state(id); // b reads version 2, then stalls
    for (let i = 1; i <= 10; i++) expect(await a.commit({ ...(await a.state(id)), lastByte: i }, [])).toBe(true);
    expect(await b.commit({ ...behind, lastByte: 99 }, [])).toBe(false);
    await expect(b.part(id, 1, behind.version)).rejects.toBeInstanceOf(StaleBookRead); // nor may it read parts as of then
    expect(await b.state(id)).toMatchObject({ lastByte: 10, version: behind.version + 10 });
    expect(await otherBook().state(id)).toMatchObject({ lastByte: 10, version: behind.version + 10 });
  });

  it('keeps a writer that computed from before the upload was removed from bringing its bookkeeping back', async () => {
    const id = 'fence-0000-0000-0000-000000000003';
    await bookedUpload(id);
    const book = stores.book;
    const first = await book.state(id);
    expect(await book.commit({ ...first, total: 10, lastByte: 9 }, [])).toBe(true);
    const stale = await otherBook().state(id); // a writer reads, then stalls
    await book.remove(id); // the content completes (or expires) meanwhile
    expect(
      await otherBook().commit({ ...stale, parts: { p1: { etag: 'late', size: 10 } } }, [
        { contentId: id, k: 1, pieces: [], stored: true, assembling: null },
      ]),
    ).toBe(false);
    expect(await book.state(id)).toMatchObject({ version: 0, total: null, lastByte: -1, parts: {} });
    expect(await book.find(id)).toBeNull();
    expect((await book.part(id, 1)).stored).toBe(false);
    // and the commits machinery, asked to change it, says it is gone rather than recreating it
    await expect(
      new BookCommits(book).commit(id, async (view) => void (view.state.lastByte = 5)),
    ).rejects.toMatchObject({ code: 'contentNotFound' });
    expect((await book.state(id)).version).toBe(0);
  });

  it('takes over the part claim of a holder that died (no renewals) within 15 s', async () => {
    const uploads = replica(10_000); // the default lease
    const total = P + 10;
    const created = await put(uploads, null, 0, Buffer.alloc(100, 1), 100, total);
    // a holder that claimed part 2 (the final part) and died right after
    await setPart(created.id, 2, (part) => ({ ...part, writing: { since: new Date(), by: 'dead-holder' } }));
    const diedAt = Date.now();
    let answer: { completedNow: boolean } | null = null;
    while (!answer) {
      try {
        answer = await put(uploads, created.id, P, Buffer.alloc(10, 2), 10, total);
      } catch (error) {
        expect(error).toMatchObject({ status: 503, code: 'partWriting' });
        await sleep(250);
      }
    }
    const tookMs = Date.now() - diedAt;
    process.stdout.write(`dead holder's part claim taken over after ${tookMs} ms\n`);
    expect(tookMs).toBeLessThan(15_000);
    expect((await stores.book.state(created.id)).parts.p2).toMatchObject({ size: 10 });
    // Counted for the alert UploadClaimsOutliveLease, once.
    const counted = (await uploads.metrics.claimsExpired.get()).values;
    expect(Object.fromEntries(counted.map((v) => [v.labels.claim, v.value]))).toEqual({
      write: 1,
      assembly: 0,
      completion: 0,
    });
  });

  it('keeps a slow holder’s claim alive past its lease by renewal, and records its write', async () => {
    const leaseMs = 1_500;
    const slow = replica(leaseMs);
    const other = replica(leaseMs);
    const total = P + 10;
    const created = await put(slow, null, 0, Buffer.alloc(100, 1), 100, total);
    // The final part (10 bytes) trickles in over more than three leases.
    const body = Readable.from(
      (async function* () {
        for (let i = 0; i < 10; i++) {
          await sleep(500);
          yield Buffer.alloc(1, 3);
        }
      })(),
    );
    const startedAt = Date.now();
    const writing = put(slow, created.id, P, body, 10, total);
    const refusals: string[] = [];
    while (Date.now() - startedAt < 4_000) {
      await sleep(800);
      await put(other, created.id, P, Buffer.alloc(10, 4), 10, total).then(
        () => refusals.push('accepted'),
        (error: ServiceError) => refusals.push(error.code),
      );
    }
    expect(await writing).toMatchObject({ completedNow: false });
    const heldMs = Date.now() - startedAt;
    process.stdout.write(`a slow holder kept its claim for ${heldMs} ms with a lease of ${leaseMs} ms\n`);
    expect(heldMs).toBeGreaterThan(2 * leaseMs);
    expect(new Set(refusals)).toEqual(new Set(['partWriting']));
    const record = (await stores.book.find(created.id))!;
    const stored = await stores.objects.listParts(record.s3Key, record.uploadId);
    expect((await stores.book.state(created.id)).parts.p2!.etag.replace(/"/g, '')).toBe(stored.get(2)!.etag);
  });

  it('aborts the S3 write of a holder whose claim was taken over, and records nothing of it', async () => {
    const leaseMs = 1_500;
    const a = replica(leaseMs);
    const total = P + 10;
    const created = await put(a, null, 0, Buffer.alloc(100, 1), 100, total);
    // A streams the final part slowly; its claim is taken over under it (as by a successor that
    // found it run out while A was paused).
    const body = Readable.from(
      (async function* () {
        for (let i = 0; i < 10; i++) {
          await sleep(400);
          yield Buffer.alloc(1, 5);
        }
      })(),
    );
    const writing = put(a, created.id, P, body, 10, total);
    await sleep(300);
    expect((await stores.book.part(created.id, 2)).writing?.by).toBeDefined();
    await setPart(created.id, 2, (part) => ({ ...part, writing: { since: new Date(), by: 'successor' } }));
    await expect(writing).rejects.toMatchObject({ status: 503, code: 'claimLost' });
    body.destroy();
    expect((await stores.book.state(created.id)).parts.p2).toBeUndefined();
    expect((await stores.book.part(created.id, 2)).writing?.by).toBe('successor');
  });
});
