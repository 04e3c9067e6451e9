import { Readable } from 'node:stream';
import { S3Client } from '@aws-sdk/client-s3';
import { MongoClient, type Db } from 'mongodb';
import { createLogger } from '@cp/logging';
import { Claims } from '../src/store/Claims';
import { ContentRepository } from '../src/store/ContentRepository';
import { Locks } from '../src/store/Locks';
import { ObjectStore } from '../src/store/ObjectStore';
import { UploadLedger } from '../src/store/UploadLedger';
import { PartAssembler } from '../src/uploads/PartAssembler';
import { UploadService } from '../src/uploads/UploadService';

/** Completion against real FerretDB/MongoDB and S3 when S3 holds other bytes for a part than recorded. */
describe('completion', () => {
  const ttlMs = 60_000;
  const now = new Date('2026-01-01T00:00:00Z');
  const clock = () => now;
  const logger = createLogger({ service: 'test', level: 'silent' });
  let mongo: MongoClient;
  let db: Db;
  let s3: S3Client;
  let objects: ObjectStore;
  let contents: ContentRepository;
  let uploads: UploadService;
  let ledger: UploadLedger;
  const { prefix } = JSON.parse(process.env.CP_TEST_STACK!) as { prefix: string };
  const bucket = `${prefix}-complete`;
  const owner = '0f0e0d0c-0b0a-4909-8807-060504030201';

  beforeAll(async () => {
    mongo = await MongoClient.connect(process.env.MONGODB_URL!);
    db = mongo.db(`${prefix}-completion`);
    s3 = new S3Client({
      endpoint: process.env.S3_ENDPOINT,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: { accessKeyId: process.env.S3_ACCESS_KEY_ID!, secretAccessKey: process.env.S3_SECRET_ACCESS_KEY! },
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });
    objects = new ObjectStore(s3, bucket);
    await objects.ensureBucket();
    contents = new ContentRepository(db);
    ledger = new UploadLedger(db);
    uploads = new UploadService(
      { contents, ledger, objects, assembler: new PartAssembler(objects), locks: new Locks(new Claims(db, 'locks')), logger },
      { uploadTtlMs: ttlMs, completionLeaseMs: 60_000, assemblyLeaseMs: 60_000, clock },
    );
  });

  afterAll(async () => {
    await db.dropDatabase();
    await mongo.close();
    s3.destroy();
  });

  const P = 64 * 1024 * 1024;

  async function bytesOf(key: string, a: number, b: number): Promise<Buffer> {
    const stored = await objects.getRange(key, a, b);
    const chunks: Buffer[] = [];
    for await (const c of stored.body) chunks.push(c as Buffer);
    return Buffer.concat(chunks);
  }

  it('drops a part whose bytes in S3 are not the recorded ones instead of failing, and completes once it is sent again', async () => {
    const total = P + 10;
    const tail = Buffer.alloc(10, 1);
    const created = await uploads.write({ ownerId: owner, contentId: null, range: { start: P, end: P + 9, total }, declaredLength: 10, contentType: null, body: Readable.from([tail]) });
    const record = (await contents.find(owner, created.id))!;
    // as if a later rewrite of part 2 had reached S3 and then failed before it was recorded
    await objects.uploadPart(record.s3Key, record.uploadId!, 2, Readable.from([Buffer.alloc(10, 9)]), 10);

    const head = Buffer.alloc(P, 2);
    const last = await uploads.write({ ownerId: owner, contentId: created.id, range: { start: 0, end: P - 1, total }, declaredLength: P, contentType: null, body: Readable.from([head]) });
    expect(last.completedNow).toBe(false);
    expect((await contents.find(owner, created.id))!.state).toBe('uploading');
    expect(await uploads.received(record)).toEqual({ total, ranges: [{ a: 0, b: P - 1 }] });

    const again = await uploads.write({ ownerId: owner, contentId: created.id, range: { start: P, end: P + 9, total }, declaredLength: 10, contentType: null, body: Readable.from([tail]) });
    expect(again.completedNow).toBe(true);
    const ready = (await contents.find(owner, created.id))!;
    expect(ready.state).toBe('ready');
    expect(await bytesOf(ready.s3Key, P - 2, P + 9)).toEqual(Buffer.concat([Buffer.alloc(2, 2), tail]));
  });
});
