import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { ServiceError } from '@cp/errors';
import { Claims } from '../src/store/Claims';
import { LedgerCommits } from '../src/store/LedgerCommits';
import { Locks } from '../src/store/Locks';
import { UploadLedger } from '../src/store/UploadLedger';
import { PartAssembler } from '../src/uploads/PartAssembler';
import { UploadService } from '../src/uploads/UploadService';
import { useRealStores } from './support/realStores';

/** Claims held by two holders (as two replicas) against the real FerretDB/MongoDB: leases, renewal, fencing. */
describe('fenced claims', () => {
  const stores = useRealStores('fenced-claims', () => new Date());
  const owner = '1f0e0d0c-0b0a-4909-8807-060504030201';
  const P = 64 * 1024 * 1024;

  /** A holder that stops renewing: a paused or dead process, as the database sees it. */
  class SilentClaims extends Claims {
    override async renew(): Promise<boolean> {
      return true; // believes it renewed; nothing reached the database
    }
  }

  /** Another replica's UploadService on the same database and bucket. */
  const replica = (leaseMs: number) =>
    new UploadService(
      {
        contents: stores.contents,
        ledger: new UploadLedger(stores.db),
        objects: stores.objects,
        assembler: new PartAssembler(stores.objects),
        locks: new Locks(new Claims(stores.db, 'locks'), leaseMs),
        logger: stores.logger,
      },
      { uploadTtlMs: 60_000, completionLeaseMs: leaseMs, assemblyLeaseMs: leaseMs },
    );

  const put = (uploads: UploadService, contentId: string | null, start: number, body: Readable | Buffer, length: number, total: number) =>
    uploads.write({
      ownerId: owner,
      contentId,
      range: { start, end: start + length - 1, total },
      declaredLength: length,
      contentType: null,
      body: Buffer.isBuffer(body) ? Readable.from([body]) : body,
    });

  it('refuses the commit of a holder paused past its lease once another took its claim over, and keeps the successor’s bookkeeping', async () => {
    const leaseMs = 500;
    const { db } = stores;
    const id = 'fence-0000-0000-0000-000000000001';
    const ledger = new UploadLedger(db);
    // Two processes: A's lock renewals never reach the database (it is paused), B's are real.
    const a = new LedgerCommits(ledger, new Locks(new SilentClaims(db, 'locks'), leaseMs), (c) => `content:${c}`);
    const b = new LedgerCommits(new UploadLedger(db), new Locks(new Claims(db, 'locks'), leaseMs), (c) => `content:${c}`);
    const claim = (by: string) => async (view: Parameters<Parameters<LedgerCommits['commit']>[1]>[0]) => {
      const part = await view.part(1);
      if (part.writing && part.writing.by !== by && Date.now() - new Date(part.writing.since).getTime() < leaseMs) throw ServiceError.of('partWriting', 'held');
      part.writing = { since: new Date(), by };
    };
    const record = (by: string, etag: string) => async (view: Parameters<Parameters<LedgerCommits['commit']>[1]>[0]) => {
      const part = await view.part(1);
      if (part.writing?.by !== by) throw ServiceError.of('claimLost', `${by} no longer holds part 1`);
      part.writing = null;
      part.stored = true;
      view.state.parts.p1 = { etag, size: P };
    };

    await a.commit(id, claim('A'));
    // A takes the content lock to record its part, and stalls inside, past every lease.
    let resume!: () => void;
    const paused = new Promise<void>((r) => (resume = r));
    const aCommit = a.commit(id, async (view) => {
      await paused;
      await record('A', 'etag-A')(view);
    });
    await sleep(3 * leaseMs);
    // B finds A's lock and part claim run out, takes both over, and records its own write.
    await b.commit(id, claim('B'));
    await b.commit(id, record('B', 'etag-B'));
    resume();
    await expect(aCommit).rejects.toMatchObject({ code: 'claimLost' });
    const state = await ledger.state(id);
    expect(state.parts.p1).toEqual({ etag: 'etag-B', size: P });
    expect((await ledger.part(id, 1)).writing ?? null).toBeNull();
  });

  it('lets exactly one of many writers computing from the same version commit', async () => {
    const id = 'fence-0000-0000-0000-000000000002';
    const ledger = new UploadLedger(stores.db);
    const base = await ledger.state(id);
    const wins = await Promise.all(
      Array.from({ length: 8 }, (_, i) => ledger.commit({ ...structuredClone(base), parts: { p1: { etag: `e${i}`, size: 1 } } }, [])),
    );
    expect(wins.filter(Boolean)).toHaveLength(1);
    const winner = wins.indexOf(true);
    expect((await ledger.state(id)).parts.p1).toEqual({ etag: `e${winner}`, size: 1 });
  });

  it('refuses a writer far behind, and shows every reader the latest version, however many versions were tidied away', async () => {
    const id = 'fence-0000-0000-0000-000000000004';
    const a = new UploadLedger(stores.db);
    const b = new UploadLedger(stores.db); // another process
    expect(await a.commit({ ...(await a.state(id)), lastByte: 0 }, [])).toBe(true);
    const behind = await b.state(id); // b reads version 1, then stalls
    for (let i = 1; i <= 10; i++) expect(await a.commit({ ...(await a.state(id)), lastByte: i }, [])).toBe(true);
    // The tidying that follows the commits (batched: within a second of the first).
    const versions = stores.db.collection('upload_versions');
    for (let waited = 0; !(await versions.findOne({ _id: `${id}:0000000002` as never, stub: true })) && waited < 5_000; waited += 100) await sleep(100);
    expect(await versions.findOne({ _id: `${id}:0000000002` as never })).toMatchObject({ stub: true });
    expect(await b.commit({ ...behind, lastByte: 99 }, [])).toBe(false); // version 2 is a stub: still taken
    expect(await b.state(id)).toMatchObject({ lastByte: 10, version: 11 });
    expect(await new UploadLedger(stores.db).state(id)).toMatchObject({ lastByte: 10, version: 11 });
  });

  it('keeps a writer that computed from before the bookkeeping was forgotten from bringing it back', async () => {
    const id = 'fence-0000-0000-0000-000000000003';
    const ledger = new UploadLedger(stores.db);
    const first = await ledger.state(id);
    expect(await ledger.commit({ ...first, total: 10, lastByte: 9 }, [])).toBe(true);
    const stale = await ledger.state(id); // a writer reads, then stalls
    await ledger.forget(id); // the content completes (or expires) meanwhile
    expect(await ledger.commit({ ...stale, parts: { p1: { etag: 'late', size: 10 } } }, [])).toBe(false);
    expect(await ledger.state(id)).toMatchObject({ total: null, lastByte: -1, parts: {} });
    // the mark goes with a sweep an hour later
    expect(await ledger.dropGoneMarks(new Date(Date.now() + 1000), 100)).toBeGreaterThanOrEqual(1);
    expect((await ledger.state(id)).version ?? 0).toBe(0);
  });

  it('takes over the part claim of a holder that died (no renewals) within 15 s', async () => {
    const uploads = replica(10_000); // the default lease
    const total = P + 10;
    const created = await put(uploads, null, 0, Buffer.alloc(100, 1), 100, total);
    // a holder that claimed part 2 (the final part) and died right after
    const dead = await stores.ledger.part(created.id, 2);
    await stores.ledger.savePart({ ...dead, writing: { since: new Date(), by: 'dead-holder' } });
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
    expect((await stores.ledger.state(created.id)).parts.p2).toMatchObject({ size: 10 });
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
    const stored = await stores.objects.listParts((await stores.contents.get(created.id))!.s3Key, (await stores.contents.get(created.id))!.uploadId!);
    expect((await stores.ledger.state(created.id)).parts.p2!.etag.replace(/"/g, '')).toBe(stored.get(2)!.etag);
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
    const part = await stores.ledger.part(created.id, 2);
    expect(part.writing?.by).toBeDefined();
    await stores.ledger.savePart({ ...part, writing: { since: new Date(), by: 'successor' } });
    await expect(writing).rejects.toMatchObject({ status: 503, code: 'claimLost' });
    body.destroy();
    expect((await stores.ledger.state(created.id)).parts.p2).toBeUndefined();
    expect((await stores.ledger.part(created.id, 2)).writing?.by).toBe('successor');
  });
});
