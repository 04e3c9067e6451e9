// Sign-in, refresh and a sid check read the database only by `_id`, and the MongoDB-compatible
// server must answer those reads from an index, or each one costs more the more sessions and users
// are kept. MongoDB does (its primary index); the local FerretDB on SQLite does only as built by
// deploy/local/backing-servers.sh (its stock `_id` lookup missed its own index: FerretDB #4646).
// Asked of the server itself with `explain`, on collections of the size where a scan would show.
import { randomUUID } from 'node:crypto';
import { MongoClient, type Db, type Document } from 'mongodb';
import { testStack } from '../../../test-e2e/support/stack';

/** Whether an explain answer names an index, MongoDB's or SQLite's words; and what it said. */
function servedByIndex(explained: Document): { indexed: boolean; plan: string } {
  const plan = JSON.stringify(explained.queryPlanner ?? explained);
  // MongoDB: IDHACK / EXPRESS_IXSCAN / IXSCAN stages; FerretDB on SQLite: `SEARCH <table> USING INDEX`.
  const indexed = /IDHACK|IXSCAN|USING (COVERING )?INDEX|USING INTEGER PRIMARY KEY/.test(plan);
  return { indexed, plan };
}

describe('lookups by _id on the MongoDB-compatible server', () => {
  let mongo: MongoClient;
  let db: Db;

  beforeAll(async () => {
    mongo = await new MongoClient(testStack().backing.MONGODB_URL).connect();
    db = mongo.db(`${testStack().prefix}-id-lookups-${randomUUID().slice(0, 8)}`);
  });
  afterAll(async () => {
    await db.dropDatabase().catch(() => undefined);
    await mongo.close();
  });

  // The collections a sign-in, a refresh or a sid check reads by `_id` (libs/registry and the
  // session-service's SessionRepository, the auth-service's TrustStore), with ids of the kinds they hold.
  const collections: Array<[string, () => string]> = [
    ['session_pairs', () => randomUUID().replace(/-/g, '').repeat(2)],
    ['session_refresh_keys', () => randomUUID().replace(/-/g, '').repeat(2)],
    ['session_rotations', () => randomUUID().replace(/-/g, '').repeat(2)],
    ['session_families', () => randomUUID()],
    ['users', () => randomUUID()],
    ['certificates', () => randomUUID().replace(/-/g, '').slice(0, 40).toUpperCase()],
    ['api_keys', () => randomUUID().replace(/-/g, '').repeat(2)],
    ['removed_trusted_certificates', () => randomUUID().replace(/-/g, '').slice(0, 40).toUpperCase()],
    ['trust_revision', () => randomUUID()],
  ];

  it.each(collections)(
    '%s: a find by _id uses the index, and finds, updates and deletes the right one',
    async (name, newId) => {
      const collection = db.collection<{ _id: string; n: number }>(name);
      const ids = Array.from({ length: 500 }, newId);
      await collection.insertMany(ids.map((_id, n) => ({ _id, n })));
      const target = ids[317]!;
      // Only `find` is explained: FerretDB's explain reads a command's `filter` and not an update's or
      // a delete's `q`. Those find their documents with the same pushdown as a find (then write them
      // by the same `_id` expression), so the find stands for all three there.
      const { indexed, plan } = servedByIndex(
        await db.command({ explain: { find: name, filter: { _id: target }, limit: 1 } }),
      );
      if (!indexed) throw new Error(`a find on ${name} by _id is not served by an index: ${plan}`);
      // And the answers are the right ones.
      expect(await collection.findOne({ _id: target })).toEqual({ _id: target, n: 317 });
      expect((await collection.updateOne({ _id: target }, { $set: { n: -1 } })).modifiedCount).toBe(1);
      expect(await collection.findOne({ _id: target })).toEqual({ _id: target, n: -1 });
      expect((await collection.deleteOne({ _id: target })).deletedCount).toBe(1);
      expect(await collection.findOne({ _id: target })).toBeNull();
      expect(await collection.countDocuments()).toBe(499);
    },
  );
});
