import { createHash, randomBytes } from 'node:crypto';
import { createServer, request, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { Crc64Nvme } from '@aws-sdk/crc64-nvme';
import {
  CreateBucketCommand,
  GetObjectLockConfigurationCommand,
  PutObjectLockConfigurationCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { createLogger } from '@cp/logging';
import { closeRedis, connectRedis, type Redis } from '@cp/redis';
import { ChecksumRefused, ObjectStore } from '../src/store/ObjectStore';
import { RedisUploadBook } from '../src/store/RedisUploadBook';
import { PartAssembler } from '../src/uploads/PartAssembler';
import { contentKey, UploadService, type WriteRequest } from '../src/uploads/UploadService';
import { dropNamespace, redisReady, testS3Client } from './support/realStores';

const P = 64 * 1024 * 1024;
const owner = '5a4b3c2d-1e0f-4a9b-8c7d-6e5f4a3b2c1d';

/**
 * An S3 bucket with Object Lock (write-once retention, what archives use) takes every kind of
 * write the service makes, and every write carries a checksum S3 checks, as AWS requires of such
 * buckets. The service talks to the local S3 server through a proxy that records each request.
 */
describe('an Object Lock bucket', () => {
  const { prefix } = JSON.parse(process.env.CP_TEST_STACK!) as { prefix: string };
  const bucket = `${prefix}-locked`;
  const seen: { method: string; url: string; headers: IncomingHttpHeaders }[] = [];
  let proxy: Server;
  let redis: Redis;
  let s3: S3Client;
  let objects: ObjectStore;
  let uploads: UploadService;

  beforeAll(async () => {
    const target = new URL(process.env.S3_ENDPOINT!);
    proxy = createServer((req, res) => {
      seen.push({ method: req.method!, url: req.url!, headers: req.headers });
      const upstream = request(
        { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers },
        (answer) => {
          res.writeHead(answer.statusCode!, answer.headers);
          answer.pipe(res);
        },
      );
      upstream.on('error', () => res.destroy());
      req.pipe(upstream);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const admin = testS3Client(process.env.S3_ENDPOINT!);
    await admin.send(new CreateBucketCommand({ Bucket: bucket, ObjectLockEnabledForBucket: true })).catch((e) => {
      if (!/BucketAlready/.test((e as Error).name)) throw e;
    });
    await admin.send(
      new PutObjectLockConfigurationCommand({
        Bucket: bucket,
        ObjectLockConfiguration: {
          ObjectLockEnabled: 'Enabled',
          Rule: { DefaultRetention: { Mode: 'GOVERNANCE', Days: 1 } },
        },
      }),
    );
    const lock = await admin.send(new GetObjectLockConfigurationCommand({ Bucket: bucket }));
    expect(lock.ObjectLockConfiguration?.ObjectLockEnabled).toBe('Enabled');
    admin.destroy();

    s3 = testS3Client(`http://127.0.0.1:${(proxy.address() as AddressInfo).port}`);
    objects = new ObjectStore(s3, bucket);
    const logger = createLogger({ service: 'test', level: 'silent' });
    redis = connectRedis(process.env.REDIS_URL!, logger, { commandTimeoutMs: 5_000 });
    await redisReady(redis);
    uploads = new UploadService(
      { book: new RedisUploadBook(redis, bucket), objects, assembler: new PartAssembler(objects), logger },
      { uploadTtlMs: 60_000, completionLeaseMs: 10_000, assemblyLeaseMs: 10_000 },
    );
  });

  afterAll(async () => {
    // versitygw applies a bucket's default retention when an object is deleted: without the rule
    // the stack's purge can delete what this suite wrote.
    const admin = testS3Client(process.env.S3_ENDPOINT!);
    await admin
      .send(
        new PutObjectLockConfigurationCommand({
          Bucket: bucket,
          ObjectLockConfiguration: { ObjectLockEnabled: 'Enabled' },
        }),
      )
      .finally(() => admin.destroy());
    await new Promise((resolve) => proxy?.close(resolve));
    if (redis) {
      await dropNamespace(redis, bucket).catch(() => undefined);
      await closeRedis(redis);
    }
    s3?.destroy();
  });

  const write = (
    request: Omit<WriteRequest, 'ownerId' | 'declaredLength' | 'contentType' | 'body'> & { bytes: Buffer },
  ) =>
    uploads.write({
      ownerId: owner,
      declaredLength: request.bytes.length,
      contentType: null,
      body: Readable.from([request.bytes]),
      ...request,
    });
  const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest();
  const crc64 = async (bytes: Buffer) => {
    const crc = new Crc64Nvme();
    crc.update(bytes);
    return Buffer.from(await crc.digest());
  };
  const stored = async (id: string) => {
    const got = (await objects.get(contentKey(owner, id), undefined))!;
    const chunks: Buffer[] = [];
    for await (const chunk of got.body) chunks.push(chunk as Buffer);
    return { bytes: Buffer.concat(chunks), digests: got.info.digests };
  };

  it('learns that S3 checks the checksums writes carry', async () => {
    expect(await objects.probeChecksums()).toBe(true);
  });

  it('stores contents by every path, and every write it sends carries a checksum', async () => {
    seen.length = 0;
    // One request, without a digest and with one.
    const plain = randomBytes(10_000);
    const one = await write({ contentId: null, range: null, bytes: plain });
    expect(await stored(one.id)).toEqual({ bytes: plain, digests: { crc64nvme: await crc64(plain) } });
    const named = randomBytes(5_000);
    const two = await write({ contentId: null, range: null, bytes: named, sha256: sha256(named) });
    expect((await stored(two.id)).digests).toEqual({ 'sha-256': sha256(named), crc64nvme: await crc64(named) });

    // Parts: the last straight into UploadPart (with its digest), the first in two staged pieces
    // (one with a digest, one without) assembled into their part.
    const bytes = randomBytes(P + 100);
    const total = bytes.length;
    const tail = bytes.subarray(P);
    const created = await write({
      contentId: null,
      range: { start: P, end: total - 1, total },
      bytes: tail,
      sha256: sha256(tail),
    });
    const half = P / 2;
    const first = bytes.subarray(0, half);
    await write({
      contentId: created.id,
      range: { start: 0, end: half - 1, total },
      bytes: first,
      sha256: sha256(first),
    });
    const done = await write({
      contentId: created.id,
      range: { start: half, end: P - 1, total },
      bytes: bytes.subarray(half, P),
    });
    expect(done.completedNow).toBe(true);
    const whole = await stored(created.id);
    expect(whole.bytes.equals(bytes)).toBe(true);
    expect(whole.digests).toEqual({ crc64nvme: await crc64(bytes) });

    const puts = seen.filter((r) => r.method === 'PUT');
    // 2 one-request objects, 1 UploadPart, 2 staged pieces, 1 assembled UploadPart.
    expect(puts.length).toBeGreaterThanOrEqual(6);
    const unchecked = puts.filter(
      (r) => !Object.keys(r.headers).some((name) => name.startsWith('x-amz-checksum-')) && !r.headers['x-amz-trailer'],
    );
    expect(unchecked.map((r) => r.url)).toEqual([]);
  });

  it("refuses a part whose bytes are not the client's digest: S3 checks it, and nothing is stored", async () => {
    const tail = randomBytes(100);
    const total = P + 100;
    const created = await write({ contentId: null, range: { start: P, end: total - 1, total }, bytes: tail });
    const head = randomBytes(P);
    await expect(
      write({ contentId: created.id, range: { start: 0, end: P - 1, total }, bytes: head, sha256: sha256(tail) }),
    ).rejects.toBeInstanceOf(ChecksumRefused);
    const record = (await new RedisUploadBook(redis, bucket).find(created.id))!;
    expect(await uploads.status.received(record)).toEqual({ total, ranges: [{ a: P, b: total - 1 }] });
  });
});
