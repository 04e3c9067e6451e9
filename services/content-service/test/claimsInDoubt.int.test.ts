import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { createLogger } from '@cp/logging';
import { closeRedis, connectRedis, type Redis } from '@cp/redis';
import { ObjectStore } from '../src/store/ObjectStore';
import { RedisUploadBook } from '../src/store/RedisUploadBook';
import { PartAssembler } from '../src/uploads/PartAssembler';
import { contentKey, UploadService } from '../src/uploads/UploadService';
import { redisReady, testS3Client } from './support/realStores';

const MiB = 1024 * 1024;
const LEASE_MS = 10_000;

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * A commit Redis takes but answers too late (it was paused): the writer reports a failure, and
 * Redis applies the commit once it resumes, with the writer's claims. The writer takes them back
 * as soon as Redis answers again, so that the client's retry is not refused for a whole lease.
 */
describe('claims written by a commit whose answer never came', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-in-doubt-'));
  let server: ChildProcess;
  let redis: Redis;
  let uploads: UploadService;
  let objects: ObjectStore;
  let book: RedisUploadBook;
  const owner = '7d3b1a52-4a0e-4c1f-9d7e-5b8f0c2e6a11';

  beforeAll(async () => {
    const port = await freePort();
    server = spawn('redis-server', ['--bind', '127.0.0.1', '--port', String(port), '--save', '', '--dir', dir], {
      stdio: 'ignore',
    });
    const logger = createLogger({ service: 'test', level: 'silent' });
    redis = connectRedis(`redis://127.0.0.1:${port}`, logger, { commandTimeoutMs: 300 });
    await redisReady(redis);
    const bucket = `in-doubt-${Date.now().toString(36)}`;
    objects = new ObjectStore(testS3Client(process.env.S3_ENDPOINT!), bucket);
    await objects.ensureBucket();
    book = new RedisUploadBook(redis, bucket);
    uploads = new UploadService(
      { book, objects, assembler: new PartAssembler(objects), logger },
      { uploadTtlMs: 60_000, completionLeaseMs: LEASE_MS, assemblyLeaseMs: LEASE_MS },
    );
  });

  afterAll(async () => {
    server?.kill('SIGCONT');
    if (redis) await closeRedis(redis);
    server?.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  const put = (contentId: string | null, start: number, bytes: Buffer, total: number) =>
    uploads.write({
      ownerId: owner,
      contentId,
      range: { start, end: start + bytes.length - 1, total },
      declaredLength: bytes.length,
      contentType: null,
      body: Readable.from([bytes]),
    });

  it('lets the retry of a write whose commit Redis applied late through within a lease', async () => {
    const total = 3 * MiB;
    const bytes = randomBytes(total);
    const created = await put(null, 0, bytes.subarray(0, MiB), total);
    // The next commit (the last range's: it claims the part's assembly) goes to a paused Redis.
    const commit = book.commit.bind(book);
    let resumedAt = 0;
    book.commit = async (state, parts) => {
      book.commit = commit;
      server.kill('SIGSTOP');
      setTimeout(() => {
        server.kill('SIGCONT');
        resumedAt = performance.now();
      }, 1_500);
      return commit(state, parts);
    };
    await expect(put(created.id, MiB, bytes.subarray(MiB), total)).rejects.toMatchObject({
      code: 'CP_ERR_REDIS_UNAVAILABLE',
    });
    while (!resumedAt) await new Promise((resolve) => setTimeout(resolve, 50));
    // The late commit was applied: the part's assembly is claimed by the writer that gave up.
    await new Promise((resolve) => setTimeout(resolve, 100));
    const answers: string[] = [];
    let done = false;
    while (!done && performance.now() - resumedAt < 2 * LEASE_MS) {
      try {
        done = (await put(created.id, MiB, bytes.subarray(MiB), total)).completedNow;
      } catch (error) {
        answers.push((error as { code?: string }).code ?? String(error));
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    }
    const waited = performance.now() - resumedAt;
    console.log(
      `retry completed ${Math.round(waited)} ms after Redis resumed (lease ${LEASE_MS} ms); refused: ${answers.join(', ') || 'none'}`,
    );
    expect(done).toBe(true);
    expect(waited).toBeLessThan(LEASE_MS / 2);
    const back = await objects.get(contentKey(owner, created.id), undefined);
    const chunks: Buffer[] = [];
    for await (const c of back!.body) chunks.push(c as Buffer);
    expect(Buffer.concat(chunks).equals(bytes)).toBe(true);
  }, 60_000);
});
