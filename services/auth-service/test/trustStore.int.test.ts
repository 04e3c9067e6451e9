// The trust lists' memory copy against the real MongoDB-compatible server: once it is older than
// its refresh period, one lookup of the revision decides whether the lists are read again.
import { randomUUID } from 'node:crypto';
import { Binary, MongoClient, type CommandStartedEvent, type Db } from 'mongodb';
import { TestPki } from '../../../test-e2e/support/pki';
import { testStack } from '../../../test-e2e/support/stack';
import { parseDer } from '../src/certificates/CertificateText';
import { TrustStore } from '../src/store/TrustStore';

describe('TrustStore', () => {
  const pki = new TestPki();
  let mongo: MongoClient;
  let db: Db;
  const finds: string[] = [];

  beforeAll(async () => {
    const stack = testStack();
    mongo = await new MongoClient(stack.backing.MONGODB_URL, { monitorCommands: true }).connect();
    db = mongo.db(`${stack.prefix}-trust-${randomUUID().slice(0, 8)}`);
    mongo.on('commandStarted', (e: CommandStartedEvent) => {
      if (e.commandName === 'find' && e.databaseName === db.databaseName) finds.push(String(e.command.find));
    });
  });

  afterAll(async () => {
    await db?.dropDatabase().catch(() => undefined);
    await mongo?.close();
  });

  const rootDoc = (name: string) => {
    const der = pki.root(name).der;
    const parsed = parseDer(Buffer.from(der));
    return { _id: parsed.thumbprint, kind: 'root' as const, subject: name, der: new Binary(der), addedAt: new Date() };
  };
  const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

  it('reads the lists again after its period only when their revision changed', async () => {
    const trust = new TrustStore(db, 50);
    await trust.add(rootDoc('Trust Root A'));
    expect((await trust.anchors()).roots).toHaveLength(1);
    finds.length = 0;

    // Older than its period, nothing changed: the revision alone is read.
    await pause(80);
    expect((await trust.anchors()).roots).toHaveLength(1);
    expect(finds).toEqual(['trust_revision']);

    // Another replica adds a root: the next check after the period sees the new revision and reads.
    await new TrustStore(db).add(rootDoc('Trust Root B'));
    finds.length = 0;
    await pause(80);
    expect((await trust.anchors()).roots).toHaveLength(2);
    expect(finds.sort()).toEqual(['removed_trusted_certificates', 'trust_revision', 'trusted_certificates']);

    // A forced read (a chain that failed against the copy) reads the lists whatever the revision.
    finds.length = 0;
    await trust.anchors(0);
    expect(finds).toContain('trusted_certificates');
  });

  it('reads the lists every period where no revision was ever written', async () => {
    const bare = mongo.db(`${db.databaseName}-bare`);
    try {
      await bare.collection('trusted_certificates').insertOne(rootDoc('Trust Root C') as never);
      const trust = new TrustStore(bare, 50);
      expect((await trust.anchors()).roots).toHaveLength(1);
      await bare.collection('trusted_certificates').insertOne(rootDoc('Trust Root D') as never);
      await pause(80);
      expect((await trust.anchors()).roots).toHaveLength(2);
    } finally {
      await bare.dropDatabase().catch(() => undefined);
    }
  });
});
