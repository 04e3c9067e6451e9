import { S3Client, type S3ClientConfig } from '@aws-sdk/client-s3';
import { createLogger, type Logger } from '@cp/logging';
import { closeRedis, connectRedis, redisCommand, type Redis } from '@cp/redis';
import { ObjectStore } from '../../src/store/ObjectStore';
import { RedisUploadBook } from '../../src/store/RedisUploadBook';
import type { UploadRecord } from '../../src/store/UploadBook';
import { PartAssembler } from '../../src/uploads/PartAssembler';
import type { ContentEvents } from '../../src/uploads/UploadContext';
import { contentKey, UploadService, type Clock } from '../../src/uploads/UploadService';

/** What a content is: a finished object in S3, an unfinished upload in the book, or nothing. */
export type ContentLookup =
  { state: 'ready'; total: number; etag: string } | { state: 'uploading'; record: UploadRecord } | null;

export interface RealStores {
  logger: Logger;
  redis: Redis;
  /** The bucket, and the namespace of the book's keys in Redis: `<prefix>-<name>`. */
  namespace: string;
  s3: S3Client;
  objects: ObjectStore;
  book: RedisUploadBook;
  uploads: UploadService;
  /** What a content of `owner` is now: its S3 object is its record once finished, the book's entry until then. */
  lookup(owner: string, id: string): Promise<ContentLookup>;
}

/** An S3 client with the test stack's keys, for `endpoint` (the S3 server, or something in front of it). */
export function testS3Client(endpoint: string, options: Partial<S3ClientConfig> = {}): S3Client {
  return new S3Client({
    endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: process.env.S3_ACCESS_KEY_ID!, secretAccessKey: process.env.S3_SECRET_ACCESS_KEY! },
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    ...options,
  });
}

/** Waits for a Redis connection to be ready (connectRedis connects in the background). */
export async function redisReady(redis: Redis, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!redis.isReady) {
    if (Date.now() > deadline) throw new Error('the test Redis did not answer');
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Deletes every key of a book's namespace (`up:<ns>:*`). */
export async function dropNamespace(redis: Redis, namespace: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redisCommand<[string, string[]]>(redis, [
      'SCAN',
      cursor,
      'MATCH',
      `up:${namespace}:*`,
      'COUNT',
      '1000',
    ]);
    if (keys.length > 0) await redisCommand(redis, ['DEL', ...keys]);
    cursor = next;
  } while (cursor !== '0');
}

/**
 * An UploadService on the test stack's S3 (bucket `<prefix>-<name>`) and a RedisUploadBook on
 * the test Redis (namespace `<prefix>-<name>`, so that suites running in parallel never share
 * keys), set up in a beforeAll registered here and closed afterwards: the returned object is
 * filled in by the time the suite's own hooks and tests run.
 */
export function useRealStores(
  name: string,
  clock: Clock,
  uploadTtlMs = 60_000,
  options: { events?: (stores: RealStores) => ContentEvents } = {},
): RealStores {
  const stores = {} as RealStores;
  const { prefix } = JSON.parse(process.env.CP_TEST_STACK!) as { prefix: string };
  const namespace = `${prefix}-${name}`;

  beforeAll(async () => {
    stores.logger = createLogger({ service: 'test', level: 'silent' });
    stores.namespace = namespace;
    stores.redis = connectRedis(process.env.REDIS_URL!, stores.logger, { commandTimeoutMs: 5_000 });
    await redisReady(stores.redis);
    stores.s3 = testS3Client(process.env.S3_ENDPOINT!);
    stores.objects = new ObjectStore(stores.s3, namespace);
    await stores.objects.ensureBucket();
    stores.book = new RedisUploadBook(stores.redis, namespace);
    stores.uploads = new UploadService(
      {
        book: stores.book,
        objects: stores.objects,
        assembler: new PartAssembler(stores.objects),
        logger: stores.logger,
        ...(options.events ? { events: options.events(stores) } : {}),
      },
      { uploadTtlMs, completionLeaseMs: 60_000, assemblyLeaseMs: 60_000, clock },
    );
    stores.lookup = async (owner, id) => {
      const ready = await stores.objects.head(contentKey(owner, id));
      if (ready) return { state: 'ready', total: ready.contentLength, etag: ready.etag };
      const record = await stores.book.find(id);
      return record && record.ownerId === owner ? { state: 'uploading', record } : null;
    };
  });

  afterAll(async () => {
    if (stores.redis) {
      await dropNamespace(stores.redis, namespace).catch(() => undefined);
      await closeRedis(stores.redis);
    }
    stores.s3?.destroy();
  });

  return stores;
}
