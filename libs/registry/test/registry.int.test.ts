// The registry against the real MongoDB-compatible server. ApiKeyStore: key format, --allow-free
// grants, the memory copy's semantics, and keys made before keys were 256-bit hex. UserRegistry:
// the registration verdict a refresh asks for.
import { createHash, randomUUID } from 'node:crypto';
import { Binary, MongoClient, type Db } from 'mongodb';
import { testStack } from '../../../test-e2e/support/stack';
import { ApiKeyStore } from '../src/ApiKeyStore';
import { UserRegistry } from '../src/UserRegistry';

describe('the registry', () => {
  let mongo: MongoClient;
  let db: Db;

  beforeAll(async () => {
    mongo = await new MongoClient(testStack().backing.MONGODB_URL).connect();
    db = mongo.db(`${testStack().prefix}-auth-keys-${randomUUID().slice(0, 8)}`);
  });
  afterAll(async () => {
    await db.dropDatabase().catch(() => undefined);
    await mongo.close();
  });

  it('are 256 random bits as 64 lower-case hex digits; only their SHA-256 is stored', async () => {
    const store = new ApiKeyStore(db);
    const keys = await Promise.all(Array.from({ length: 5 }, () => store.create('t', new Date())));
    for (const key of keys) {
      expect(key).toMatch(/^[0-9a-f]{64}$/);
      const doc = await db
        .collection('api_keys')
        .findOne({ _id: createHash('sha256').update(key).digest('hex') as never });
      expect(doc).toMatchObject({ label: 't' });
      expect(JSON.stringify(doc)).not.toContain(key);
    }
    expect(new Set(keys).size).toBe(5);
  });

  it('grant free=true only to keys created with allowFree', async () => {
    const store = new ApiKeyStore(db);
    const plain = await store.create('plain', new Date());
    const free = await store.create('free', new Date(), { allowFree: true });
    expect(await store.grantOf(plain)).toEqual({ allowFree: false });
    expect(await store.grantOf(free)).toEqual({ allowFree: true });
    expect(await store.grantOf(free.toUpperCase())).toEqual({ allowFree: true });
    expect(await store.grantOf('f'.repeat(64))).toBeUndefined();
    expect(await db.collection('api_keys').countDocuments({ allowFree: true })).toBe(1);
  });

  it('keep UUID keys made before working (never with free)', async () => {
    const old = randomUUID();
    await db
      .collection('api_keys')
      .insertOne({ _id: createHash('sha256').update(old).digest('hex') as never, label: 'old', createdAt: new Date() });
    const store = new ApiKeyStore(db);
    expect(await store.isValid(old)).toBe(true);
    expect(await store.isValid(old.toUpperCase())).toBe(true);
    expect(await store.grantOf(old)).toEqual({ allowFree: false });
  });

  it('are remembered for rememberMs by a replica; a revoke on the same replica counts at once', async () => {
    const writer = new ApiKeyStore(db);
    const replica = new ApiKeyStore(db, 60_000);
    const key = await writer.create('cached', new Date());
    expect(await replica.isValid(key)).toBe(true);
    expect(await writer.revoke(key)).toBe(true);
    expect(await replica.isValid(key)).toBe(true); // its memory copy, until rememberMs passes
    expect(await new ApiKeyStore(db).isValid(key)).toBe(false);
    const other = await writer.create('revoked here', new Date());
    expect(await replica.isValid(other)).toBe(true);
    expect(await replica.revoke(other)).toBe(true);
    expect(await replica.isValid(other)).toBe(false);
  });

  describe('registrations', () => {
    const cert = (thumbprint: string, userId: string) => ({
      _id: thumbprint,
      userId,
      subject: 'CN=t',
      notAfter: new Date(Date.now() + 3600_000),
      der: new Binary(Buffer.from([0])),
      addedAt: new Date(),
    });

    it('say registered with the owners listed now, and name what was removed otherwise', async () => {
      const registry = new UserRegistry(db);
      const [user, other] = [randomUUID(), randomUUID()];
      const [owner, added] = [randomUUID(), randomUUID()];
      const thumbprint = 'A'.repeat(40);
      await registry.upsertUser(user, [owner], new Date());
      await registry.upsertUser(other, [randomUUID()], new Date());
      await registry.addCertificate(cert(thumbprint, user));
      await registry.addCertificate(cert('B'.repeat(40), other));

      expect(await registry.check(user, thumbprint)).toEqual({ registered: true, owners: [owner] });
      expect(await registry.check(user.toUpperCase(), thumbprint.toLowerCase())).toEqual({
        registered: true,
        owners: [owner],
      });
      expect(await registry.check(user, undefined)).toEqual({ registered: true, owners: [owner] });
      await registry.upsertUser(user, [added], new Date());
      expect(await registry.check(user, thumbprint)).toEqual({ registered: true, owners: [owner, added] });
      // Another user's certificate is not this user's.
      expect(await registry.check(user, 'B'.repeat(40))).toEqual({ registered: false, reason: 'CertificateRemoved' });
      expect(await registry.removeCertificate(thumbprint)).toBe(true);
      expect(await registry.check(user, thumbprint)).toEqual({ registered: false, reason: 'CertificateRemoved' });
      expect(await registry.check(user, undefined)).toEqual({ registered: true, owners: [owner, added] });
      await db.collection('users').deleteOne({ _id: user as never });
      expect(await registry.check(user, undefined)).toEqual({ registered: false, reason: 'UserRemoved' });
      expect(await registry.check(user, 'B'.repeat(40))).toEqual({ registered: false, reason: 'UserRemoved' });
    });
  });
});
