import { MongoClient, type Db } from 'mongodb';
import { UploadLedger } from '../src/store/UploadLedger';

/** What the ledger leaves behind on the real FerretDB/MongoDB: garbage of old versions, and of a writer that lost a race. */
describe('UploadLedger tidying', () => {
  const { prefix } = JSON.parse(process.env.CP_TEST_STACK!) as { prefix: string };
  let mongo: MongoClient;
  let db: Db;

  beforeAll(async () => {
    mongo = await MongoClient.connect(process.env.MONGODB_URL!);
    db = mongo.db(`${prefix}-ledger-tidy`);
  });

  afterAll(async () => {
    await db.dropDatabase();
    await mongo.close();
  });

  const piece = (a: number, b: number) => ({ a, b, kind: 'part' as const, key: null, sha256: null });

  it('tidies behind a run of commits: every version but the last two a stub, only their part documents kept', async () => {
    const id = 'tidy-run-0000-0000-000000000001';
    const ledger = new UploadLedger(db);
    for (let i = 0; i < 12; i++) {
      const state = await ledger.state(id);
      const part = await ledger.part(id, 1, state);
      part.pieces = [...part.pieces, piece(i * 10, i * 10 + 9)];
      expect(await ledger.commit(state, [part])).toBe(true); // not waiting for the tidies: they batch up
    }
    const versions = db.collection('upload_versions');
    await waitFor(async () => (await versions.countDocuments({ contentId: id, stub: true })) === 10);
    await waitFor(async () => (await db.collection('part_ranges').countDocuments({ contentId: id })) === 2);
    const whole = await versions.find({ contentId: id, stub: { $exists: false } }).toArray();
    expect(whole.map((v) => v.n).sort()).toEqual([11, 12]);
    expect((await new UploadLedger(db).part(id, 1)).pieces).toHaveLength(12);
    expect((await db.collection('upload_heads').findOne({ _id: id as never }))?.n).toBe(12);
  });

  it('forgets a content whose tidy has not run yet: no part document left, every version but the mark a stub', async () => {
    const id = 'tidy-forget-0000-0000-000000000003';
    const writer = new UploadLedger(db);
    const other = new UploadLedger(db); // another replica, whose own tidy is still waiting too
    for (let i = 0; i < 6; i++) {
      const ledger = i % 2 === 0 ? writer : other;
      const state = await ledger.state(id);
      const part = await ledger.part(id, 1 + (i % 3), state);
      part.pieces = [...part.pieces, piece(i * 10, i * 10 + 9)];
      expect(await ledger.commit(state, [part])).toBe(true);
    }
    await writer.forget(id);
    expect(await db.collection('part_ranges').countDocuments({ contentId: id })).toBe(0);
    const versions = await db.collection('upload_versions').find({ contentId: id }).toArray();
    expect(versions.filter((v) => !v.stub).map((v) => [v.n, v.gone])).toEqual([[7, true]]);
    expect(await writer.state(id)).toMatchObject({ lastByte: -1, parts: {}, version: 7 });
  });

  it('leaves no part document of a writer that lost the race for a version', async () => {
    const id = 'lost-race-0000-0000-000000000002';
    const a = new UploadLedger(db);
    const b = new UploadLedger(db);
    const fromA = await a.state(id);
    const fromB = await b.state(id);
    const partA = await a.part(id, 1, fromA);
    const partB = await b.part(id, 1, fromB);
    partA.pieces = [piece(0, 9)];
    partB.pieces = [piece(10, 19)];
    expect(await a.commit(fromA, [partA])).toBe(true);
    expect(await b.commit(fromB, [partB])).toBe(false);
    expect(await db.collection('part_ranges').countDocuments({ contentId: id })).toBe(1); // A's; B's went when its version lost
    expect((await new UploadLedger(db).part(id, 1)).pieces).toEqual([piece(0, 9)]);
  });
});

async function waitFor(check: () => Promise<boolean>, ms = 5_000): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
