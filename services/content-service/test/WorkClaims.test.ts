import { PART_SIZE } from '@cp/protocol';
import { UploadMetrics } from '../src/uploads/UploadMetrics';
import {
  allReceived,
  claimCompletion,
  claimRemainingWork,
  claimWork,
  countTakeovers,
  type ClaimKind,
} from '../src/uploads/BookCommits';
import { InMemoryBookView as InMemoryLedger, direct, staged } from './support/MemoryUploadBook';

const P = PART_SIZE;
const leases = { completionLeaseMs: 60_000, assemblyLeaseMs: 30_000 };
const now = new Date('2026-01-01T12:00:00Z');
const ago = (ms: number) => new Date(now.getTime() - ms);
const total = 2 * P + 10; // parts 1 and 2 full, part 3 of 10 bytes

describe('claiming the assembly of parts', () => {
  it('claims a part covered by staged pieces, marking it as being assembled', async () => {
    const ledger = new InMemoryLedger();
    ledger.part('c', 1).pieces = [staged(0, P / 2 - 1), staged(P / 2, P - 1)];
    const work = await claimWork(ledger.view('c'), total, [1], now, leases);
    expect(work).toEqual({
      assemblies: [{ k: 1, pieces: ledger.part('c', 1).pieces }],
      complete: false,
      total,
      allReceived: false,
    });
    expect(ledger.part('c', 1).assembling).toEqual(now);
    expect(ledger.state('c').covered).toEqual({ p1: true });
  });

  it('claims a final part covered once the total is known, and nothing while it is not', async () => {
    const ledger = new InMemoryLedger();
    ledger.part('c', 3).pieces = [staged(2 * P, 2 * P + 9)];
    expect((await claimWork(ledger.view('c'), null, [3], now, leases)).assemblies).toEqual([]);
    expect((await claimWork(ledger.view('c'), total, [3], now, leases)).assemblies.map((a) => a.k)).toEqual([3]);
  });

  it('leaves a part that is not covered, holds a direct write, or is stored already', async () => {
    const ledger = new InMemoryLedger();
    ledger.part('c', 1).pieces = [staged(0, P - 2)];
    ledger.part('c', 2).pieces = [direct(P, 2 * P - 1)];
    ledger.part('c', 3).pieces = [staged(2 * P, 2 * P + 9)];
    ledger.state('c').parts.p3 = { etag: 'e3', size: 10 };
    expect((await claimWork(ledger.view('c'), total, [1, 2, 3], now, leases)).assemblies).toEqual([]);
  });

  it('leaves a part another request assembles or writes into, until its lease ran out', async () => {
    const ledger = new InMemoryLedger();
    const part = ledger.part('c', 1);
    part.pieces = [staged(0, P - 1)];
    part.assembling = ago(1_000);
    expect((await claimWork(ledger.view('c'), total, [1], now, leases)).assemblies).toEqual([]);
    part.assembling = null;
    part.writing = { since: ago(1_000), by: 'other' };
    expect((await claimWork(ledger.view('c'), total, [1], now, leases)).assemblies).toEqual([]);
    part.writing = { since: ago(leases.assemblyLeaseMs + 1), by: 'other' };
    expect((await claimWork(ledger.view('c'), total, [1], now, leases)).assemblies.map((a) => a.k)).toEqual([1]);
  });

  it('reports the claims it took over past their lease, and none it took fresh', async () => {
    const ledger = new InMemoryLedger();
    const part = ledger.part('c', 1);
    part.pieces = [staged(0, P - 1)];
    expect((await claimWork(ledger.view('c'), total, [1], now, leases)).takenOver).toBeUndefined();
    part.assembling = ago(leases.assemblyLeaseMs + 1);
    part.writing = { since: ago(leases.assemblyLeaseMs + 1), by: 'dead' };
    ledger.state('c').parts = {};
    expect((await claimWork(ledger.view('c'), total, [1], now, leases)).takenOver).toEqual(['assembly', 'write']);
    const metrics = new UploadMetrics();
    countTakeovers(metrics, ['assembly', 'write', 'write']);
    const counted = await metrics.claimsExpired.get();
    expect(Object.fromEntries(counted.values.map((v) => [v.labels.claim, v.value]))).toEqual({
      write: 2,
      assembly: 1,
      completion: 0,
    });
  });

  it('claims no completion while it claims an assembly', async () => {
    const ledger = new InMemoryLedger();
    const { parts } = ledger.state('c');
    parts.p2 = { etag: 'e2', size: P };
    parts.p3 = { etag: 'e3', size: 10 };
    ledger.part('c', 1).pieces = [staged(0, P - 1)];
    const work = await claimWork(ledger.view('c'), total, [1], now, leases);
    expect([work.assemblies.length, work.complete, ledger.state('c').completing]).toEqual([1, false, null]);
  });
});

describe('claiming the completion', () => {
  const allStored = () => {
    const ledger = new InMemoryLedger();
    Object.assign(ledger.state('c').parts, {
      p1: { etag: 'e1', size: P },
      p2: { etag: 'e2', size: P },
      p3: { etag: 'e3', size: 10 },
    });
    return ledger.state('c');
  };

  it('is claimed once every part is stored with its grid size, by one caller only', () => {
    const state = allStored();
    expect(claimCompletion(state, total, now, leases)).toBe(true);
    expect(state.completing).toEqual(now);
    expect(claimCompletion(state, total, new Date(now.getTime() + 1), leases)).toBe(false);
  });

  it('is taken over when the holder let its lease run out', () => {
    const state = allStored();
    state.completing = ago(leases.completionLeaseMs + 1);
    const takenOver: string[] = [];
    expect(claimCompletion(state, total, now, leases, 'h', takenOver as ClaimKind[])).toBe(true);
    expect(takenOver).toEqual(['completion']);
  });

  it('is not claimed while a part is missing or has another size than its place in the grid', () => {
    const missing = allStored();
    delete missing.parts.p2;
    expect(claimCompletion(missing, total, now, leases)).toBe(false);
    const short = allStored();
    short.parts.p2 = { etag: 'e2', size: P - 1 };
    expect(claimCompletion(short, total, now, leases)).toBe(false);
  });

  it('is not claimed while the total is unknown, nor for an empty content', () => {
    expect(claimCompletion(allStored(), null, now, leases)).toBe(false);
    expect(claimCompletion(allStored(), 0, now, leases)).toBe(false);
  });

  it('is not claimed, nor any remaining work, once the upload is marked for removal (expired or deleted)', async () => {
    const state = allStored();
    state.expiring = now;
    expect(claimCompletion(state, total, now, leases)).toBe(false);
    const ledger = new InMemoryLedger();
    Object.assign(ledger.state('c'), { lastByte: 2 * P + 9, expiring: now });
    ledger.part('c', 3).pieces = [staged(2 * P, 2 * P + 9)];
    expect(await claimRemainingWork(ledger.view('c'), total, now, leases, 'h')).toBeNull();
    expect(ledger.part('c', 3).assembling).toBeNull();
  });

  it('is claimed by claimWork when the candidates need no assembly', async () => {
    const ledger = new InMemoryLedger();
    Object.assign(ledger.state('c').parts, {
      p1: { etag: 'e1', size: P },
      p2: { etag: 'e2', size: P },
      p3: { etag: 'e3', size: 10 },
    });
    expect(await claimWork(ledger.view('c'), total, [3], now, leases)).toEqual({
      assemblies: [],
      complete: true,
      total,
      allReceived: true,
    });
  });
});

describe('knowing that every byte is received', () => {
  it('counts a part as received once it is stored or its staged pieces cover it, and only then', () => {
    const state = { ...new InMemoryLedger().state('c') };
    expect(allReceived(state, total)).toBe(false);
    state.parts = { p1: { etag: 'e1', size: P }, p3: { etag: 'e3', size: 10 } };
    expect(allReceived(state, total)).toBe(false); // part 2 neither stored nor covered
    state.covered = { p2: true };
    expect(allReceived(state, total)).toBe(true);
    expect(allReceived(state, null)).toBe(false); // no total: never
  });

  it('tells the request that covered the last part while another part is still being assembled', async () => {
    const ledger = new InMemoryLedger();
    Object.assign(ledger.state('c').parts, { p1: { etag: 'e1', size: P } });
    ledger.state('c').covered = { p2: true }; // assembled after its request answered, not yet stored
    ledger.part('c', 2).assembling = now;
    ledger.part('c', 3).pieces = [staged(2 * P, 2 * P + 9)];
    const work = await claimWork(ledger.view('c'), total, [3], now, leases);
    expect(work).toMatchObject({ complete: false, allReceived: true });
    expect(work.assemblies.map((a) => a.k)).toEqual([3]);
  });
});
