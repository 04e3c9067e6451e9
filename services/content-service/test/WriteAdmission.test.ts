import { ServiceError } from '@cp/errors';
import type { PartRanges } from '../src/store/UploadBook';
import { MAX_CONTENT_SIZE, MAX_RANGES_PER_PART, PART_SIZE } from '@cp/protocol';
import {
  admitWrite,
  advancesLastByte,
  checkWritable,
  extendedExpiry,
  settleTotal,
} from '../src/uploads/WriteAdmission';
import { InMemoryBookView as InMemoryLedger, direct, staged } from './support/MemoryUploadBook';

const P = PART_SIZE;
const leases = { completionLeaseMs: 60_000, assemblyLeaseMs: 30_000 };
const now = new Date('2026-01-01T12:00:00Z');
const ago = (ms: number) => new Date(now.getTime() - ms);
const refused = (fn: () => unknown) => {
  try {
    fn();
  } catch (error) {
    return error as ServiceError;
  }
  throw new Error('not refused');
};

describe('admitting a write by its headers', () => {
  const write = (
    contentId: string | null,
    range: { start: number; end: number; total: number | null } | null,
    declaredLength: number | null,
  ) => admitWrite({ contentId, range, declaredLength });

  it('stores a POST without Content-Range as one whole content, its length known or not', () => {
    expect(write(null, null, 5)).toEqual({ kind: 'whole', total: 5 });
    expect(write(null, null, null)).toEqual({ kind: 'whole', total: null });
  });

  it('stores a POST of a range that is the whole content as one whole content', () => {
    expect(write(null, { start: 0, end: 99, total: 100 }, 100)).toEqual({ kind: 'whole', total: 100 });
  });

  it('creates a multipart content from a POST of part of it, and writes a PUT into its content', () => {
    expect(write(null, { start: 0, end: 99, total: 300 }, 100)).toMatchObject({ kind: 'create' });
    expect(write(null, { start: 0, end: 99, total: null }, 100)).toMatchObject({ kind: 'create' });
    expect(write('c1', { start: 100, end: 199, total: 300 }, null)).toEqual({
      kind: 'range',
      contentId: 'c1',
      range: { start: 100, end: 199, total: 300 },
    });
  });

  it('refuses a PUT without Content-Range with 400', () => {
    expect(refused(() => write('c1', null, 5))).toMatchObject({ status: 400, code: 'missingContentRange' });
  });

  it('refuses more than 64 MiB in one request with 413', () => {
    expect(refused(() => write(null, null, P + 1))).toMatchObject({ status: 413, code: 'partTooLarge' });
    expect(refused(() => write('c1', { start: 0, end: P, total: null }, null))).toMatchObject({
      status: 413,
      code: 'partTooLarge',
    });
  });

  it('refuses a content past 30 GiB with 413, by its total or by its last byte', () => {
    expect(refused(() => write(null, { start: 0, end: 9, total: MAX_CONTENT_SIZE + 1 }, 10))).toMatchObject({
      status: 413,
      code: 'contentTooLarge',
    });
    expect(
      refused(() => write('c1', { start: MAX_CONTENT_SIZE - 5, end: MAX_CONTENT_SIZE + 4, total: null }, 10)),
    ).toMatchObject({
      status: 413,
      code: 'contentTooLarge',
    });
  });

  it('refuses a Content-Length other than the range length with 400', () => {
    expect(refused(() => write('c1', { start: 0, end: 9, total: null }, 11))).toMatchObject({
      status: 400,
      code: 'bodyLengthMismatch',
    });
  });
});

describe('settling the total', () => {
  const ledger = new InMemoryLedger();
  const state = (total: number | null, lastByte: number) => ({ ...ledger.state('c'), total, lastByte });

  it('takes the total a range names when none is known, and keeps it unknown when none is named', () => {
    expect(settleTotal({ total: null }, state(null, -1), { start: 0, end: 9, total: 300 })).toBe(300);
    expect(settleTotal({ total: null }, state(null, 50), { start: 0, end: 9, total: null })).toBeNull();
    expect(settleTotal({ total: null }, state(300, 50), { start: 0, end: 9, total: null })).toBe(300);
  });

  it('refuses another total than the known one with 409', () => {
    expect(refused(() => settleTotal({ total: 300 }, state(null, -1), { start: 0, end: 9, total: 301 }))).toMatchObject(
      { status: 409, code: 'totalConflict' },
    );
  });

  it('refuses a total smaller than the bytes already received with 409', () => {
    expect(
      refused(() => settleTotal({ total: null }, state(null, 299), { start: 0, end: 9, total: 200 })),
    ).toMatchObject({
      status: 409,
      code: 'totalConflict',
    });
  });

  it('refuses a range that ends at or past the total with 400', () => {
    expect(
      refused(() => settleTotal({ total: 300 }, state(null, -1), { start: 250, end: 300, total: null })),
    ).toMatchObject({
      status: 400,
      code: 'rangePastTotal',
    });
  });
});

describe('what a write may not clash with', () => {
  const setUp = () => {
    const ledger = new InMemoryLedger();
    return { state: ledger.state('c'), part: ledger.part('c', 1) };
  };
  const check = (
    state: ReturnType<typeof setUp>['state'],
    parts: PartRanges[],
    a: number,
    b: number,
    writer?: string,
  ) => checkWritable(state, parts, { a, b }, leases, now, writer);

  it('accepts new bytes and exactly the same range again (a retry)', () => {
    const { state, part } = setUp();
    part.pieces = [staged(0, 99)];
    expect(() => check(state, [part], 100, 199)).not.toThrow();
    expect(() => check(state, [part], 0, 99)).not.toThrow();
  });

  it('refuses a new range into a part that holds the most ranges a part may have, but not a retry', () => {
    const { state, part } = setUp();
    part.pieces = Array.from({ length: MAX_RANGES_PER_PART - 1 }, (_, i) => staged(2 * i, 2 * i + 1));
    expect(() => check(state, [part], P - 2, P - 1)).not.toThrow();
    part.pieces.push(staged(P - 2, P - 1));
    expect(refused(() => check(state, [part], P - 4, P - 3))).toMatchObject({ status: 409, code: 'partTooFragmented' });
    expect(() => check(state, [part], 0, 1)).not.toThrow();
  });

  it('refuses a range that partly overlaps received bytes with 409 naming them', () => {
    const { state, part } = setUp();
    part.pieces = [staged(0, 99)];
    expect(refused(() => check(state, [part], 50, 149))).toMatchObject({
      status: 409,
      code: 'rangeOverlap',
      message: expect.stringContaining('bytes 0-99'),
    });
  });

  it('answers 404 once the sweeper decided to expire the upload', () => {
    const { state, part } = setUp();
    state.expiring = ago(1);
    expect(refused(() => check(state, [part], 0, 9))).toMatchObject({ status: 404, code: 'contentNotFound' });
  });

  it('answers 503 while a completion runs, and lets writes through once its lease ran out', () => {
    const { state, part } = setUp();
    state.completing = ago(1_000);
    expect(refused(() => check(state, [part], 0, 9))).toMatchObject({ status: 503, code: 'contentCompleting' });
    state.completing = ago(leases.completionLeaseMs + 1);
    expect(() => check(state, [part], 0, 9)).not.toThrow();
  });

  it('answers 503 while the part is assembled, until the assembly lease ran out', () => {
    const { state, part } = setUp();
    part.assembling = ago(1_000);
    expect(refused(() => check(state, [part], 0, 9))).toMatchObject({ status: 503, code: 'partAssembling' });
    part.assembling = ago(leases.assemblyLeaseMs + 1);
    expect(() => check(state, [part], 0, 9)).not.toThrow();
  });

  it('answers 503 while another request writes into the S3 part, but not to that request itself', () => {
    const { state, part } = setUp();
    part.writing = { since: ago(1_000), by: 'other' };
    expect(refused(() => check(state, [part], 0, 9))).toMatchObject({ status: 503, code: 'partWriting' });
    expect(() => check(state, [part], 0, 9, 'other')).not.toThrow();
    part.writing = { since: ago(leases.assemblyLeaseMs + 1), by: 'other' };
    expect(() => check(state, [part], 0, 9)).not.toThrow();
  });

  it('sees the pieces of every part the range touches', () => {
    const ledger = new InMemoryLedger();
    const second = ledger.part('c', 2);
    second.pieces = [direct(P, 2 * P - 1)];
    expect(
      refused(() =>
        checkWritable(ledger.state('c'), [ledger.part('c', 1), second], { a: P - 10, b: P + 10 }, leases, now),
      ),
    ).toMatchObject({
      code: 'rangeOverlap',
    });
  });
});

describe('the last byte and the expiry a write moves', () => {
  it('follows the last byte exactly while the total is unknown, and only into new parts once it is known', () => {
    const state = { ...new InMemoryLedger().state('c'), lastByte: 99 };
    expect(advancesLastByte(state, null, 150)).toBe(true);
    expect(advancesLastByte(state, null, 50)).toBe(false);
    expect(advancesLastByte(state, 3 * P, 150)).toBe(false);
    expect(advancesLastByte(state, 3 * P, P + 1)).toBe(true);
    expect(advancesLastByte({ ...state, lastByte: -1 }, 3 * P, 10)).toBe(true);
  });

  it('moves the expiry a full time to live on, at most twice the time to live from creation, and not for small steps', () => {
    const ttl = 100_000;
    const createdAt = new Date(0);
    expect(extendedExpiry({ createdAt, expiresAt: new Date(ttl) }, 500, ttl)).toBeNull(); // less than 1 % of the ttl later
    expect(extendedExpiry({ createdAt, expiresAt: new Date(ttl) }, 50_000, ttl)).toBe(150_000);
    expect(extendedExpiry({ createdAt, expiresAt: new Date(ttl) }, 150_000, ttl)).toBe(2 * ttl);
    expect(extendedExpiry({ createdAt, expiresAt: new Date(2 * ttl) }, 190_000, ttl)).toBeNull();
  });
});
