import { randomBytes, randomUUID } from 'node:crypto';
import { types } from 'node:util';
import { createLogger } from '@cp/logging';
import { closeRedis, connectRedis, redisCommand, type Redis } from '@cp/redis';
import { RedisUploadBook } from '../src/store/RedisUploadBook';
import {
  emptyPart,
  OwnedLimitReached,
  StaleBookRead,
  type PartRanges,
  type UploadBook,
  type UploadRecord,
  type UploadState,
} from '../src/store/UploadBook';
import { MemoryUploadBook } from './support/MemoryUploadBook';
import { dropNamespace, redisReady } from './support/realStores';

/**
 * The contract of UploadBook (its doc comments), held by every implementation: RedisUploadBook on
 * the test Redis and the MemoryUploadBook of the unit tests, in the manner of tus-node-server's
 * shared store suite. Each test gets a book of its own (a fresh namespace in Redis), as the
 * expiry and cleanup indexes span the whole book.
 */
const logger = createLogger({ service: 'test', level: 'silent' });
const run = `contract-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
let redis: Redis;
let books = 0;

beforeAll(async () => {
  redis = connectRedis(process.env.REDIS_URL!, logger, { commandTimeoutMs: 5_000 });
  await redisReady(redis);
});

afterAll(async () => {
  await dropNamespace(redis, `${run}*`).catch(() => undefined);
  await closeRedis(redis);
});

const implementations: [string, () => UploadBook][] = [
  ['RedisUploadBook', () => new RedisUploadBook(redis, `${run}-${++books}`)],
  ['MemoryUploadBook', () => new MemoryUploadBook()],
];

const T0 = new Date('2026-03-01T12:00:00.000Z');
const at = (ms: number) => new Date(T0.getTime() + ms);

function newRecord(overrides: Partial<UploadRecord> = {}): UploadRecord {
  const id = overrides._id ?? randomUUID();
  return {
    _id: id,
    ownerId: '0f0e0d0c-0b0a-4909-8807-060504030201',
    total: 300,
    contentType: 'application/octet-stream',
    s3Key: `contents/0f0e0d0c-0b0a-4909-8807-060504030201/${id}`,
    uploadId: `upload-${id}`,
    uploader: 'bearer:someone',
    createdAt: T0,
    expiresAt: at(60_000),
    ...overrides,
  };
}

/**
 * A part or state with its optional fields filled in: an implementation may leave out a claim that
 * was never set or give it as null, alike by the contract. Dates are checked with util.types.isDate
 * (the in-memory book's structuredClone makes Dates of another realm than the test's).
 */
const part = (p: PartRanges) => ({ ...p, assemblingBy: p.assemblingBy ?? null, writing: p.writing ?? null });
const st = (s: UploadState) => ({
  ...s,
  completingBy: s.completingBy ?? null,
  expiring: s.expiring ?? null,
  covered: s.covered ?? {},
});
const isDate = (value: unknown) => types.isDate(value);

/** A part with every field a writer sets, dates included. */
function fullPart(contentId: string, k: number): PartRanges {
  return {
    contentId,
    k,
    pieces: [
      { a: 0, b: 99, kind: 'staged', key: `staging/${contentId}/0-99.abc`, sha256: 'f'.repeat(64) },
      { a: 100, b: 199, kind: 'part', key: null, sha256: null },
    ],
    stored: false,
    assembling: at(1_234),
    assemblingBy: 'holder-a',
    writing: { since: at(5_678), by: 'writer-b' },
  };
}

describe.each(implementations)('UploadBook contract: %s', (name, makeBook) => {
  let book: UploadBook;

  beforeEach(() => {
    book = makeBook();
  });

  async function created(overrides: Partial<UploadRecord> = {}): Promise<UploadRecord> {
    const record = newRecord(overrides);
    await book.create(record);
    return record;
  }

  describe('records', () => {
    it('finds a created upload’s record as it was written, dates as Dates', async () => {
      const record = await created({ total: null, uploader: null });
      const found = await book.find(record._id);
      expect(found).toEqual(record);
      expect(isDate(found!.createdAt)).toBe(true);
      expect(isDate(found!.expiresAt)).toBe(true);
      expect(await book.find(randomUUID())).toBeNull();
    });

    it('refuses to create an upload that exists, and keeps the first record', async () => {
      const record = await created();
      await expect(book.create({ ...record, contentType: 'text/plain', expiresAt: at(120_000) })).rejects.toThrow();
      expect(await book.find(record._id)).toEqual(record);
      expect((await book.state(record._id)).version).toBe(1);
    });

    it('finds the upload in force: the record’s until a commit names another, then that one', async () => {
      const record = await created({ metadata: { 'created-at': '2026-01-01T00:00:00.000Z' } });
      expect((await book.find(record._id))?.uploadId).toBe(record.uploadId);
      const state = await book.state(record._id);
      expect(await book.commit({ ...state, uploadId: 'again-1', lostSince: null }, [])).toBe(true);
      expect(await book.find(record._id)).toEqual({ ...record, uploadId: 'again-1' });
      const later = await book.state(record._id);
      expect(later.uploadId).toBe('again-1');
      expect(await book.commit({ ...later, lostSince: new Date(5_000) }, [])).toBe(true);
      expect((await book.state(record._id)).lostSince).toEqual(new Date(5_000));
    });

    it('leaves the expiry of an existing upload alone when its create is refused', async () => {
      const record = await created({ expiresAt: at(60_000) });
      await expect(book.create({ ...record, expiresAt: at(1_000) })).rejects.toThrow();
      expect(await book.expired(at(30_000), 10)).toEqual([]);
      expect(await book.expired(at(60_001), 10)).toEqual([record._id]);
    });
  });

  describe('state and parts', () => {
    it('gives version 0 and empty bookkeeping for an unknown id', async () => {
      const id = randomUUID();
      const state = await book.state(id);
      expect(state).toMatchObject({ _id: id, total: null, lastByte: -1, parts: {}, completing: null, version: 0 });
      expect(part(await book.part(id, 1))).toEqual(part(emptyPart(id, 1)));
    });

    it('gives a fresh upload empty bookkeeping at version 1, and empty parts', async () => {
      const { _id: id } = await created();
      const state = await book.state(id);
      expect(state).toMatchObject({ _id: id, total: null, lastByte: -1, parts: {}, completing: null, version: 1 });
      expect(state.completingBy ?? null).toBeNull();
      expect(state.expiring ?? null).toBeNull();
      expect(state.covered ?? {}).toEqual({});
      expect(part(await book.part(id, 3))).toEqual(part(emptyPart(id, 3)));
      expect(part(await book.part(id, 3, 1))).toEqual(part(emptyPart(id, 3)));
    });

    it('commits from the version read: the version moves on by one, and state and parts read back as written, dates revived', async () => {
      const { _id: id } = await created();
      const read = await book.state(id);
      const state: UploadState = {
        ...read,
        total: 3 * 64 * 1024 * 1024,
        lastByte: 199,
        parts: { p2: { etag: '"etag-2"', size: 64 * 1024 * 1024 } },
        completing: at(42),
        completingBy: 'holder-c',
        covered: { p1: true },
        expiring: at(43),
      };
      const p1 = fullPart(id, 1);
      const p2: PartRanges = {
        ...emptyPart(id, 2),
        stored: true,
        pieces: [{ a: 64 * 1024 * 1024, b: 128 * 1024 * 1024 - 1, kind: 'part', key: null, sha256: null }],
      };
      expect(await book.commit(state, [p1, p2])).toBe(true);

      const after = await book.state(id);
      expect(st(after)).toEqual(st({ ...state, version: read.version + 1 }));
      expect(isDate(after.completing)).toBe(true);
      expect(isDate(after.expiring)).toBe(true);
      const part1 = await book.part(id, 1);
      expect(part(part1)).toEqual(part(p1));
      expect(isDate(part1.assembling)).toBe(true);
      expect(isDate(part1.writing!.since)).toBe(true);
      expect(await book.part(id, 2, after.version)).toMatchObject({
        stored: true,
        pieces: p2.pieces,
        assembling: null,
      });
      expect(part(await book.part(id, 3))).toEqual(part(emptyPart(id, 3))); // untouched

      // A later commit that changes only the state leaves the parts as they were; cleared claims read back cleared.
      expect(
        await book.commit({ ...after, completing: null, completingBy: null, expiring: null }, [
          { ...p1, assembling: null, writing: null },
        ]),
      ).toBe(true);
      const again = await book.state(id);
      expect(again).toMatchObject({ version: read.version + 2, completing: null, lastByte: 199 });
      expect(again.expiring ?? null).toBeNull();
      expect(await book.part(id, 1)).toMatchObject({ assembling: null, pieces: p1.pieces });
      expect((await book.part(id, 1)).writing ?? null).toBeNull();
      expect(await book.part(id, 2)).toMatchObject({ stored: true });
    });

    it('refuses a commit from a version that is no longer the latest, and changes nothing', async () => {
      const { _id: id } = await created();
      const stale = await book.state(id);
      expect(await book.commit({ ...stale, lastByte: 10 }, [{ ...emptyPart(id, 1), stored: true }])).toBe(true);
      const latest = await book.state(id);
      expect(await book.commit({ ...stale, lastByte: 99, total: 100 }, [fullPart(id, 1), fullPart(id, 2)])).toBe(false);
      expect(st(await book.state(id))).toEqual(st(latest));
      expect(part(await book.part(id, 1))).toEqual(part({ ...emptyPart(id, 1), stored: true }));
      expect(part(await book.part(id, 2))).toEqual(part(emptyPart(id, 2)));
    });

    it('lets exactly one of 8 concurrent commits from the same version win', async () => {
      const { _id: id } = await created();
      const base = await book.state(id);
      const wins = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          book.commit({ ...structuredClone(base), parts: { p1: { etag: `e${i}`, size: 1 } } }, [
            { ...emptyPart(id, 1), assemblingBy: `w${i}` },
          ]),
        ),
      );
      expect(wins.filter(Boolean)).toHaveLength(1);
      const winner = wins.indexOf(true);
      const after = await book.state(id);
      expect(after).toMatchObject({ version: base.version + 1, parts: { p1: { etag: `e${winner}`, size: 1 } } });
      expect((await book.part(id, 1)).assemblingBy).toBe(`w${winner}`);
    });

    it('throws StaleBookRead for a part read as of a version that is no longer the latest', async () => {
      const { _id: id } = await created();
      const first = await book.state(id);
      expect(await book.commit(first, [fullPart(id, 1)])).toBe(true);
      await expect(book.part(id, 1, first.version)).rejects.toBeInstanceOf(StaleBookRead);
      await expect(book.part(id, 2, first.version)).rejects.toBeInstanceOf(StaleBookRead);
      expect(part(await book.part(id, 1, first.version + 1))).toEqual(part(fullPart(id, 1)));
      expect(part(await book.part(id, 1))).toEqual(part(fullPart(id, 1)));
      // and once the upload is removed, no version but 0 is the latest
      await book.remove(id);
      await expect(book.part(id, 1, first.version + 1)).rejects.toBeInstanceOf(StaleBookRead);
    });
  });

  describe('removal', () => {
    it('refuses a commit computed before remove(), and brings nothing back', async () => {
      const record = await created({ expiresAt: at(1_000) });
      const id = record._id;
      expect(await book.commit({ ...(await book.state(id)), total: 10, lastByte: 9 }, [fullPart(id, 1)])).toBe(true);
      const stale = await book.state(id); // a writer reads, then stalls
      await book.remove(id); // the content completes (or expires) meanwhile
      expect(
        await book.commit({ ...stale, parts: { p1: { etag: 'late', size: 10 } } }, [
          { ...fullPart(id, 1), stored: true },
        ]),
      ).toBe(false);
      expect(await book.find(id)).toBeNull();
      expect(await book.state(id)).toMatchObject({ version: 0, total: null, lastByte: -1, parts: {} });
      expect(part(await book.part(id, 1))).toEqual(part(emptyPart(id, 1)));
      expect(await book.expired(at(10_000), 10)).toEqual([]);
    });

    it('refuses a commit to an upload never created, and brings nothing into being', async () => {
      const id = randomUUID();
      expect(await book.commit({ ...(await book.state(id)), lastByte: 5 }, [fullPart(id, 1)])).toBe(false);
      expect(await book.commit({ ...(await book.state(id)), lastByte: 5, version: 1 }, [fullPart(id, 1)])).toBe(false);
      expect(await book.find(id)).toBeNull();
      expect((await book.state(id)).version).toBe(0);
      expect(part(await book.part(id, 1))).toEqual(part(emptyPart(id, 1)));
    });

    it('removes an upload that was never created without complaint', async () => {
      await expect(book.remove(randomUUID())).resolves.toBeUndefined();
    });
  });

  describe('expiry', () => {
    it('moves an expiry later, never earlier', async () => {
      const { _id: id } = await created({ expiresAt: at(60_000) });
      await book.extend(id, at(30_000));
      expect((await book.find(id))!.expiresAt).toEqual(at(60_000));
      expect(await book.expired(at(45_000), 10)).toEqual([]);
      await book.extend(id, at(90_000));
      expect((await book.find(id))!.expiresAt).toEqual(at(90_000));
      expect(await book.expired(at(75_000), 10)).toEqual([]);
      expect(await book.expired(at(90_001), 10)).toEqual([id]);
      await book.extend(id, at(80_000));
      expect((await book.find(id))!.expiresAt).toEqual(at(90_000));
      expect(await book.expired(at(85_000), 10)).toEqual([]);
    });

    it('extends nothing into being for an unknown upload', async () => {
      const id = randomUUID();
      await book.extend(id, at(10_000));
      expect(await book.find(id)).toBeNull();
      expect(await book.expired(at(20_000), 10)).toEqual([]);
    });

    it('lists the uploads expired before now, oldest first, at most `limit`, and not once removed', async () => {
      const c = await created({ expiresAt: at(3_000) });
      const a = await created({ expiresAt: at(1_000) });
      const later = await created({ expiresAt: at(10_000) });
      const b = await created({ expiresAt: at(2_000) });
      expect(await book.expired(at(0), 10)).toEqual([]);
      expect(await book.expired(at(1_000), 10)).toEqual([]); // an expiry at now is not before it
      expect(await book.expired(at(2_500), 10)).toEqual([a._id, b._id]);
      expect(await book.expired(at(5_000), 10)).toEqual([a._id, b._id, c._id]);
      expect(await book.expired(at(5_000), 2)).toEqual([a._id, b._id]);
      expect(await book.expired(at(20_000), 10)).toEqual([a._id, b._id, c._id, later._id]);
      await book.remove(b._id);
      expect(await book.expired(at(5_000), 10)).toEqual([a._id, c._id]);
    });
  });

  describe("an owner's uploads", () => {
    const owner = randomUUID();
    const otherOwner = randomUUID();

    it('lists an owner’s uploads in id order after a cursor, at most `limit`, and not other owners’', async () => {
      const ids = Array.from({ length: 7 }, () => randomUUID());
      // created out of order, with another owner's in between
      for (const id of [...ids].reverse()) {
        await created({ _id: id, ownerId: owner });
        await created({ ownerId: otherOwner });
      }
      const sorted = [...ids].sort();
      expect(await book.ownedUploads(owner, null, 100)).toEqual(sorted);
      expect(await book.ownedUploads(owner, null, 3)).toEqual(sorted.slice(0, 3));
      expect(await book.ownedUploads(owner, sorted[2]!, 3)).toEqual(sorted.slice(3, 6));
      expect(await book.ownedUploads(owner, sorted[6]!, 3)).toEqual([]);
      // a cursor between ids (one that is not an upload's) starts after it all the same
      const between = `${sorted[3]!.slice(0, 35)}`;
      expect(await book.ownedUploads(owner, between, 100)).toEqual(sorted.filter((id) => id > between));
      expect(await book.ownedUploads(randomUUID(), null, 100)).toEqual([]);
      expect(await book.ownedUploads(otherOwner, null, 100)).toHaveLength(7);
    });

    it('lists an upload from its creation until its removal, and a paged listing has no gap and no duplicate', async () => {
      const ids = await Promise.all(Array.from({ length: 25 }, async () => (await created({ ownerId: owner }))._id));
      await book.remove(ids[5]!);
      const paged: string[] = [];
      for (let after: string | null = null, pages = 0; pages < 20; pages++) {
        const page = await book.ownedUploads(owner, after, 4);
        paged.push(...page);
        if (page.length < 4) break;
        after = page[page.length - 1]!;
      }
      expect(paged).toEqual(ids.filter((id) => id !== ids[5]).sort());
      await book.remove(randomUUID()); // an unknown one: no harm
      expect(await book.ownedUploads(owner, null, 100)).toHaveLength(24);
    });

    it('creates within the owner’s limit only, one at a time even when they race, and keeps nothing of a refused one', async () => {
      const limited = randomUUID();
      await created({ ownerId: limited });
      const racing = Array.from({ length: 8 }, () => newRecord({ ownerId: limited }));
      const outcomes = await Promise.allSettled(racing.map((r) => book.create(r, 3)));
      expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(2);
      for (const o of outcomes) if (o.status === 'rejected') expect(o.reason).toEqual(new OwnedLimitReached(3, 3));
      expect(await book.ownedCount(limited)).toBe(3);
      const refused = racing.filter((_, i) => outcomes[i]!.status === 'rejected');
      for (const r of refused) expect(await book.find(r._id)).toBeNull();
      expect((await book.expired(at(10 ** 12), 1000)).filter((id) => refused.some((r) => r._id === id))).toEqual([]);
      // A place freed is a place again; other owners are not counted.
      await book.remove((await book.ownedUploads(limited, null, 1))[0]!);
      await expect(book.create(newRecord({ ownerId: limited }), 3)).resolves.toBeUndefined();
      await expect(book.create(newRecord({ ownerId: randomUUID() }), 1)).resolves.toBeUndefined();
    });

    it('counts an owner’s uploads from their creation until their removal, and no other owner’s', async () => {
      const counted = randomUUID();
      expect(await book.ownedCount(counted)).toBe(0);
      const ids = await Promise.all(Array.from({ length: 5 }, async () => (await created({ ownerId: counted }))._id));
      await created({ ownerId: randomUUID() });
      expect(await book.ownedCount(counted)).toBe(5);
      await book.remove(ids[0]!);
      await book.remove(ids[0]!);
      expect(await book.ownedCount(counted)).toBe(4);
    });
  });

  describe('cleanups', () => {
    it('keeps noted cleanups until done, oldest first, at most `limit`; noting one twice keeps the first time', async () => {
      const [x, y, z] = [randomUUID(), randomUUID(), randomUUID()];
      expect(await book.pendingCleanups(10)).toEqual([]);
      await book.noteCleanup(y, at(2_000));
      await book.noteCleanup(x, at(1_000));
      await book.noteCleanup(z, at(3_000));
      await book.noteCleanup(x, at(9_000)); // again, later: still the oldest
      expect(await book.pendingCleanups(10)).toEqual([x, y, z]);
      expect(await book.pendingCleanups(2)).toEqual([x, y]);
      await book.cleanupDone(y);
      expect(await book.pendingCleanups(10)).toEqual([x, z]);
      await book.cleanupDone(y); // done twice: no harm
      await book.cleanupDone(x);
      await book.cleanupDone(z);
      expect(await book.pendingCleanups(10)).toEqual([]);
    });

    it('keeps a cleanup note apart from the upload’s bookkeeping', async () => {
      const { _id: id } = await created();
      await book.noteCleanup(id, at(1_000));
      await book.remove(id);
      expect(await book.pendingCleanups(10)).toEqual([id]);
      await book.cleanupDone(id);
      expect(await book.pendingCleanups(10)).toEqual([]);
    });
  });
});

/**
 * The cost of one operation must not grow with the number of uploads held: a state() and a
 * commit() cost the same Redis round trips, and the same commands on the server (those run inside
 * Lua scripts included, as MONITOR shows them), with 10 and with 1,000 other uploads.
 */
describe('RedisUploadBook, a creation that died part-way', () => {
  it('drops the owner’s index entry of a creation that died before its record, when the sweeper removes it', async () => {
    const book = new RedisUploadBook(redis, `${run}-${++books}`);
    const record = newRecord({ ownerId: randomUUID() });
    // create() dies just before its record: its first three commands (expiry, owner, index entry) went through.
    const command = (redis as unknown as { sendCommand: (args: string[]) => Promise<unknown> }).sendCommand.bind(redis);
    let calls = 0;
    Object.assign(redis, {
      sendCommand: (args: string[]) => {
        if (++calls > 3) return Promise.reject(new Error('killed'));
        return command(args);
      },
    });
    try {
      await expect(book.create(record)).rejects.toThrow('killed');
    } finally {
      Object.assign(redis, { sendCommand: command });
    }
    expect(await book.find(record._id)).toBeNull();
    expect(await book.ownedUploads(record.ownerId, null, 10)).toEqual([record._id]);
    expect(await book.ownedCount(record.ownerId)).toBe(1);
    expect(await book.expired(at(61_000), 10)).toEqual([record._id]);
    // The sweeper finds the expiry entry without an upload and removes it: the owner's entry goes too.
    await book.remove(record._id);
    expect(await book.ownedUploads(record.ownerId, null, 10)).toEqual([]);
    expect(await book.ownedCount(record.ownerId)).toBe(0);
    expect(await book.expired(at(61_000), 10)).toEqual([]);
  });
});

describe('RedisUploadBook cost', () => {
  it('costs the same round trips and server commands for state() + commit() with 10 and with 1,000 uploads held', async () => {
    const namespace = `${run}-cost`;
    let roundTrips = 0;
    // The connection the book uses, counting what it sends (each sendCommand is one round trip).
    const counted = new Proxy(redis, {
      get(target, prop) {
        const value = Reflect.get(target, prop, target) as unknown;
        if (prop === 'sendCommand') {
          return (...args: unknown[]) => {
            roundTrips++;
            return (value as (...a: unknown[]) => unknown).apply(target, args);
          };
        }
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
    const book = new RedisUploadBook(counted, namespace);

    // What the server runs on this namespace, scripts' own commands included.
    const monitorClient = connectRedis(process.env.REDIS_URL!, logger, { commandTimeoutMs: 5_000 });
    await redisReady(monitorClient);
    const seen: string[] = [];
    await (monitorClient as unknown as { monitor(cb: (line: string) => void): Promise<void> }).monitor((line) => {
      if (line.includes(`up:${namespace}:`) || line.includes('cost-marker-')) seen.push(line);
    });

    const createMany = async (n: number) => {
      for (let i = 0; i < n; i += 100) {
        await Promise.all(
          Array.from({ length: Math.min(100, n - i) }, () => book.create(newRecord({ expiresAt: at(60_000 + i) }))),
        );
      }
    };

    /** Waits until the monitor's stream (behind the commands) shows a marker sent now. */
    const caughtUp = async () => {
      const marker = `cost-marker-${randomBytes(4).toString('hex')}`;
      await redisCommand(redis, ['ECHO', marker]);
      for (let waited = 0; !seen.some((l) => l.includes(marker)) && waited < 5_000; waited += 10)
        await new Promise((r) => setTimeout(r, 10));
      expect(seen.some((l) => l.includes(marker))).toBe(true);
    };

    /** Round trips and server commands of one state() + commit() on a fresh upload (created before counting). */
    const measure = async () => {
      const record = newRecord();
      await book.create(record);
      await caughtUp();
      roundTrips = 0;
      seen.length = 0;
      const state = await book.state(record._id);
      const ok = await book.commit({ ...state, lastByte: 99 }, [{ ...fullPart(record._id, 1), stored: true }]);
      expect(ok).toBe(true);
      const trips = roundTrips;
      await caughtUp();
      const commands = seen
        .filter((l) => !l.includes('cost-marker-'))
        .map((l) => l.match(/"([A-Za-z]+)"/)?.[1]?.toUpperCase());
      return { trips, commands };
    };

    try {
      await createMany(10);
      await measure(); // the first commit loads the script (NOSCRIPT, then EVAL)
      const few = await measure();
      await createMany(1_000 - 12);
      expect(await redisCommand(redis, ['ZCARD', `up:${namespace}:~expiry`])).toBeGreaterThanOrEqual(1_000);
      const many = await measure();
      process.stdout.write(
        `state()+commit(): ${few.trips} round trips, server commands ${few.commands.join(' ')} (10 held); ${many.trips}, ${many.commands.join(' ')} (1,000 held)\n`,
      );
      expect(few.trips).toBe(2);
      expect(many.trips).toBe(few.trips);
      expect(many.commands).toEqual(few.commands);
      expect(few.commands.length).toBeGreaterThan(0);
      expect(few.commands).not.toContain('SCAN');
      expect(few.commands).not.toContain('KEYS');
    } finally {
      await closeRedis(monitorClient);
      await dropNamespace(redis, namespace).catch(() => undefined);
    }
  });
});
