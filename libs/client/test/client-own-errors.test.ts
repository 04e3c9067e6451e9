import { execFileSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { ApiError, ContentClient, ContentStateError, NotRefreshableError } from '../src';
import { FakeContentApi } from './support/FakeContentApi';

const PART = 64 * 1024;
const OWNER = '00000000-0000-4000-8000-000000000001';

/** An intercept that does `action` as the first request arrives, and answers every request as usual. */
function onFirstRequest(action: () => void): () => undefined {
  let done = false;
  return () => {
    if (!done) {
      done = true;
      action();
    }
    return undefined;
  };
}

describe('what the client finds out by itself', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-client-own-'));
  let api: FakeContentApi;
  let client: ContentClient;
  /** A content the service holds the first `have` parts of, of `total` bytes. */
  const started = (data: Buffer, have: number) => {
    const id = randomUUID();
    const parts = new Map<number, Buffer>();
    for (let k = 0; k < have; k++) parts.set(k * PART, data.subarray(k * PART, (k + 1) * PART));
    api.contents.set(id, { total: data.length, parts });
    return id;
  };

  beforeEach(async () => {
    api = new FakeContentApi();
    client = new ContentClient({
      baseUrl: await api.start(),
      credentials: { kind: 'bearer', token: 'ok' },
      partSize: PART,
    });
  });
  afterEach(async () => {
    client.close();
    await api.stop();
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('refuses to resume a content of another size with a ContentStateError, not an API error, and sends nothing', async () => {
    const id = started(randomBytes(3 * PART), 1);
    const path = join(dir, 'other-size.bin');
    writeFileSync(path, randomBytes(2 * PART));
    const error = await client.uploadFile(path, { owner: OWNER, resume: id }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ContentStateError);
    expect(error).not.toBeInstanceOf(ApiError);
    expect(error).toMatchObject({
      name: 'ContentStateError',
      code: 'totalConflict',
      message: `content ${id} is ${3 * PART} bytes long, the file ${2 * PART}`,
    });
    expect((error as ContentStateError).hint).toMatch(/new content/);
    expect(api.count('PUT')).toBe(0);
  });

  it('refuses to refresh a Bearer token with a NotRefreshableError, and sends nothing', async () => {
    const error = await client.refresh().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NotRefreshableError);
    expect((error as Error).message).toMatch(/Bearer token cannot be refreshed/);
    expect(api.count('POST')).toBe(0);
  });

  it('refuses to download a content still uploading with a ContentStateError', async () => {
    const id = started(randomBytes(3 * PART), 1);
    await expect(client.downloadFile(id, join(dir, 'not-ready.bin'), { owner: OWNER })).rejects.toMatchObject({
      name: 'ContentStateError',
      code: 'contentNotReady',
    });
  });

  it('resumes a stream by reading through the parts the service holds and sending only the rest', async () => {
    const data = randomBytes(3 * PART + 10);
    const id = started(data, 2);
    const progress: number[] = [];
    const again = await client.uploadStream(Readable.from([data]), {
      owner: OWNER,
      resume: id,
      spoolDir: dir,
      onProgress: (p) => progress.push(p.done),
    });
    expect(again).toBe(id);
    expect(api.bytesOf(id).equals(data)).toBe(true);
    expect(
      api.seen
        .filter((s) => s.method === 'PUT')
        .map((s) => s.range)
        .sort(),
    ).toEqual([`bytes ${2 * PART}-${3 * PART - 1}/*`, `bytes ${3 * PART}-${3 * PART + 9}/${data.length}`]);
    expect(progress[progress.length - 1]).toBe(data.length);
  });

  it('reads a named pipe given as a file through, storing its bytes, not an empty content', async () => {
    const fifo = join(dir, `fifo-${randomUUID()}`);
    execFileSync('mkfifo', [fifo]);
    const data = randomBytes(3 * PART + 100);
    const writer = import('node:fs/promises').then((fs) => fs.writeFile(fifo, data));
    const id = await client.uploadFile(fifo, { owner: OWNER });
    await writer;
    const stored = api.contents.get(id)!;
    expect(stored.total).toBe(data.length);
    const bytes = Buffer.concat([...stored.parts.entries()].sort(([a], [b]) => a - b).map(([, part]) => part));
    expect(bytes.equals(data)).toBe(true);
  });

  it('refuses an empty stream, or one longer than the size announced, as an IntegrityError', async () => {
    await expect(client.uploadStream(Readable.from([]), { owner: OWNER, size: 5 })).rejects.toThrow(
      'the stream had 0 bytes, not the 5 announced',
    );
    expect(api.contents.size).toBe(0);
    // The first part fits what was announced and is sent; the second, past it, is not.
    await expect(
      client.uploadStream(Readable.from([randomBytes(3 * PART)]), { owner: OWNER, size: PART + 10 }),
    ).rejects.toThrow(`the stream is longer than the ${PART + 10} bytes announced`);
    expect([...api.contents.values()].map((c) => c.parts.size)).toEqual([1]);
  });

  it('refuses a file written to while it was uploaded, and one that shrank, as IntegrityErrors', async () => {
    const path = join(dir, 'changing.bin');
    writeFileSync(path, randomBytes(4 * PART));
    api.intercept = onFirstRequest(() => writeFileSync(path, randomBytes(4 * PART))); // same size, other bytes, a later mtime
    await expect(client.uploadFile(path, { owner: OWNER, concurrency: 1 })).rejects.toThrow('was written to while');

    const shrinking = join(dir, 'shrinking.bin');
    writeFileSync(shrinking, randomBytes(4 * PART));
    api.intercept = onFirstRequest(() => writeFileSync(shrinking, randomBytes(PART))); // three parts fewer, while the first is sent
    const started = Date.now();
    await expect(client.uploadFile(shrinking, { owner: OWNER, concurrency: 1 })).rejects.toThrow('shrank');
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('gives up an attempt on a connection silent past its limit, and retries it within the budget', async () => {
    const silent = createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const quiet = new ContentClient({
      baseUrl: `http://127.0.0.1:${(silent.address() as AddressInfo).port}`,
      credentials: { kind: 'bearer', token: 'ok' },
      retryForMs: 1_000,
      silenceMs: { read: 300, write: 300 },
    });
    try {
      const started = Date.now();
      await expect(quiet.status(OWNER, randomUUID())).rejects.toThrow('silent');
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      quiet.close();
      silent.closeAllConnections();
      await new Promise((resolve) => silent.close(resolve));
    }
  });
});
