import { S3Client } from '@aws-sdk/client-s3';
import { MongoClient, type Db } from 'mongodb';
import { createLogger, type Logger } from '@cp/logging';
import { Claims } from '../../src/store/Claims';
import { ContentRepository } from '../../src/store/ContentRepository';
import { Locks } from '../../src/store/Locks';
import { ObjectStore } from '../../src/store/ObjectStore';
import { UploadLedger } from '../../src/store/UploadLedger';
import { PartAssembler } from '../../src/uploads/PartAssembler';
import { UploadService, type Clock } from '../../src/uploads/UploadService';

export interface RealStores {
  logger: Logger;
  db: Db;
  s3: S3Client;
  objects: ObjectStore;
  contents: ContentRepository;
  ledger: UploadLedger;
  uploads: UploadService;
}

/**
 * An UploadService on the test stack's FerretDB and S3 (database and bucket `<prefix>-<name>`),
 * set up in a beforeAll registered here and dropped afterwards: the returned object is filled in
 * by the time the suite's own hooks and tests run.
 */
export function useRealStores(name: string, clock: Clock, uploadTtlMs = 60_000): RealStores {
  const stores = {} as RealStores;
  const { prefix } = JSON.parse(process.env.CP_TEST_STACK!) as { prefix: string };
  let mongo: MongoClient;

  beforeAll(async () => {
    mongo = await MongoClient.connect(process.env.MONGODB_URL!);
    stores.logger = createLogger({ service: 'test', level: 'silent' });
    stores.db = mongo.db(`${prefix}-${name}`);
    stores.s3 = new S3Client({
      endpoint: process.env.S3_ENDPOINT,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: { accessKeyId: process.env.S3_ACCESS_KEY_ID!, secretAccessKey: process.env.S3_SECRET_ACCESS_KEY! },
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });
    stores.objects = new ObjectStore(stores.s3, `${prefix}-${name}`);
    await stores.objects.ensureBucket();
    stores.contents = new ContentRepository(stores.db);
    stores.ledger = new UploadLedger(stores.db);
    stores.uploads = new UploadService(
      {
        contents: stores.contents,
        ledger: stores.ledger,
        objects: stores.objects,
        assembler: new PartAssembler(stores.objects),
        locks: new Locks(new Claims(stores.db, 'locks')),
        logger: stores.logger,
      },
      { uploadTtlMs, completionLeaseMs: 60_000, assemblyLeaseMs: 60_000, clock },
    );
  });

  afterAll(async () => {
    await stores.db.dropDatabase();
    await mongo.close();
    stores.s3.destroy();
  });

  return stores;
}
