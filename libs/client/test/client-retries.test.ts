import { Crc64Nvme } from '@aws-sdk/crc64-nvme';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import fc from 'fast-check';
import { ApiError, ContentClient, spooledParts, type Credentials } from '../src';
import { FakeContentApi } from './support/FakeContentApi';

const PART = 64 * 1024;
const OWNER = '00000000-0000-4000-8000-000000000001';

describe('the client against a service that fails in exact ways', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-client-unit-'));
  let api: FakeContentApi;
  let url: string;
  const clients: ContentClient[] = [];
  const client = (
    credentials: Credentials = { kind: 'bearer', token: 'ok' },
    onCredentials?: (c: Credentials) => void,
  ) => {
    const c = new ContentClient({ baseUrl: url, credentials, partSize: PART, onCredentials });
    clients.push(c);
    return c;
  };
  const file = (bytes: number) => {
    const data = randomBytes(bytes);
    const path = join(dir, `f-${bytes}-${Math.random()}`);
    writeFileSync(path, data);
    return { path, data };
  };

  beforeEach(async () => {
    api = new FakeContentApi();
    url = await api.start();
  });
  afterEach(async () => {
    clients.splice(0).forEach((c) => c.close());
    await api.stop();
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('retries a part after 503 with Retry-After and after a dropped connection, and the content is whole', async () => {
    const { path, data } = file(10 * PART + 123);
    const total = data.length;
    const third = `bytes ${2 * PART}-${3 * PART - 1}/${total}`;
    const fourth = `bytes ${3 * PART}-${4 * PART - 1}/${total}`;
    api.intercept = (s, n) => {
      if (s.method === 'PUT' && s.range === third && n === 1)
        return {
          status: 503,
          headers: { 'retry-after': '0' },
          body: { id: 'urn:error:contents:contentBusy', 'status-code': 503, message: 'busy' },
        };
      if (s.method === 'PUT' && s.range === fourth && n <= 2) return 'drop';
      return undefined;
    };
    const id = await client().uploadFile(path, { owner: OWNER, concurrency: 3 });
    expect(api.bytesOf(id).equals(data)).toBe(true);
    expect(api.count('PUT', third)).toBe(2);
    expect(api.count('PUT', fourth)).toBe(3);
  });

  it('sends the SHA-256 and CRC-64/NVME of each part as its Content-Digest (the fake refuses another SHA-256)', async () => {
    const { path, data } = file(3 * PART + 10);
    const id = await client().uploadFile(path, { owner: OWNER, concurrency: 2 });
    expect(api.bytesOf(id).equals(data)).toBe(true);
    const writes = api.seen.filter((s) => s.method === 'POST' || s.method === 'PUT');
    expect(writes).toHaveLength(4);
    for (const w of writes)
      expect(String(w.headers['content-digest'])).toMatch(
        /^sha-256=:[A-Za-z0-9+/]{43}=:, crc64nvme=:[A-Za-z0-9+/]{11}=:$/,
      );
  });

  it('holds an upload against the whole-content CRC-64/NVME the service names, parts sent in any order', async () => {
    const { path, data } = file(3 * PART + 10);
    const crcOf = async (b: Buffer) => {
      const crc = new Crc64Nvme();
      crc.update(b);
      return `crc64nvme=:${Buffer.from(await crc.digest()).toString('base64')}:`;
    };
    const right = await crcOf(data);
    api.reprDigest = () => right;
    const c = client();
    const id = await c.uploadFile(path, { owner: OWNER, concurrency: 3 });
    expect(api.bytesOf(id).equals(data)).toBe(true);
    const wrong = await crcOf(Buffer.from('other bytes'));
    api.reprDigest = () => wrong;
    await expect(c.uploadFile(path, { owner: OWNER, concurrency: 3 })).rejects.toMatchObject({
      name: 'IntegrityError',
      message: expect.stringMatching(/^CRC-64\/NVME of the file sent is [0-9a-f]{16}; the service's Repr-Digest names/),
    });
  });

  it('does not retry a refusal (409) and keeps its code, message and hint', async () => {
    const { path } = file(3 * PART);
    api.intercept = (s) =>
      s.method === 'PUT'
        ? {
            status: 409,
            body: {
              id: 'urn:error:contents:totalConflict',
              'status-code': 409,
              message: 'total differs',
              'track-id': 'tr-9',
            },
          }
        : undefined;
    const error = await client()
      .uploadFile(path, { owner: OWNER, concurrency: 1 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({ code: 'totalConflict', message: 'total differs', trackId: 'tr-9' });
    expect((error as ApiError).hint).toMatch(/new content/);
    expect(api.count('PUT')).toBe(1);
  });

  it('keeps exactly N parts in flight when there are enough', async () => {
    const { path, data } = file(9 * PART);
    // Hold every PUT answer until four are waiting (or, so a broken client fails instead of hanging, a while).
    let held: (() => void)[] = [];
    api.beforeAnswer = (s) =>
      s.method !== 'PUT'
        ? Promise.resolve()
        : new Promise<void>((resolve) => {
            held.push(resolve);
            const release = () => {
              const now = held;
              held = [];
              now.forEach((r) => r());
            };
            if (held.length === 4) release();
            else setTimeout(release, 3000).unref();
          });
    const id = await client().uploadFile(path, { owner: OWNER, concurrency: 4 });
    expect(api.bytesOf(id).equals(data)).toBe(true);
    expect(api.maxInFlight).toBe(4);
  });

  it('resumes by sending only the grid parts the service lacks', async () => {
    const { path, data } = file(6 * PART + 5);
    const first = client();
    const abort = new AbortController();
    let id = '';
    await expect(
      first.uploadFile(path, {
        owner: OWNER,
        concurrency: 1,
        signal: abort.signal,
        onContentId: (cid) => (id = cid),
        onProgress: (p) => p.done >= 3 * PART && abort.abort(new Error('stop')),
      }),
    ).rejects.toThrow('stop');
    const before = api.seen.length;
    const have = api.contents.get(id)!.parts.size;
    const again = await client().uploadFile(path, { owner: OWNER, resume: id });
    expect(again).toBe(id);
    expect(api.bytesOf(id).equals(data)).toBe(true);
    const resent = api.seen.slice(before).filter((s) => s.method === 'PUT');
    expect(resent).toHaveLength(7 - have);
  });

  it('shares one refresh among parts that all get 401 at once, and every part then succeeds', async () => {
    const { path, data } = file(7 * PART);
    const saved: Credentials[] = [];
    const c = client({ kind: 'session', sid: api.sid, refreshToken: api.refreshToken, apiKey: 'k' }, (cr) =>
      saved.push(cr),
    );
    // The sid expires right after the first part created the content.
    api.intercept = (s) => {
      if (s.method === 'POST' && s.path.startsWith('/v1/')) queueMicrotask(() => (api.sid = 'SID-EXPIRED'));
      return undefined;
    };
    let sidAfterPost = '';
    api.beforeAnswer = async (s) => {
      if (s.method === 'POST') sidAfterPost = api.sid;
    };
    const id = await c.uploadFile(path, { owner: OWNER, concurrency: 4 });
    expect(sidAfterPost).toBe('SID-EXPIRED');
    expect(api.bytesOf(id).equals(data)).toBe(true);
    expect(api.refreshes).toBe(1);
    expect(saved).toEqual([{ kind: 'session', sid: 'SID-2', refreshToken: 'RT-2', apiKey: 'k' }]);
    expect(
      api.seen.filter((s) => s.authorization === 'auth.sid SID-1' && s.method === 'PUT').length,
    ).toBeGreaterThanOrEqual(1);
  });

  it('does not refresh a Bearer token: the 401 is the answer', async () => {
    const { path } = file(10);
    const c = client({ kind: 'bearer', token: 'expired' });
    await expect(c.uploadFile(path, { owner: OWNER })).rejects.toMatchObject({ status: 401, code: 'invalidSession' });
    expect(api.refreshes).toBe(0);
  });

  it('goes on with a range whose connection broke off mid-body from the last byte written, and checks length and SHA-256', async () => {
    const { path, data } = file(5 * PART + 7);
    const c = client();
    const id = await c.uploadFile(path, { owner: OWNER });
    api.intercept = (s, n) =>
      s.method === 'GET' && s.range === `bytes=${PART}-${2 * PART - 1}` && n === 1 ? 'drop-mid-body' : undefined;
    const out = join(dir, 'down.bin');
    // The break comes once the first half of the range is in the file, however slow the disk.
    const half = data.subarray(PART, PART + PART / 2);
    api.breakWhen = () => {
      try {
        return readFileSync(`${out}.partial`)
          .subarray(PART, PART + PART / 2)
          .equals(half);
      } catch {
        return false;
      }
    };
    const { createHash } = await import('node:crypto');
    const sha = createHash('sha256').update(data).digest('hex');
    await expect(c.downloadFile(id, out, { owner: OWNER, chunkSize: PART, sha256: sha })).resolves.toEqual({
      bytes: data.length,
      sha256: sha,
    });
    expect(readFileSync(out).equals(data)).toBe(true);
    expect(api.count('GET', `bytes=${PART}-${2 * PART - 1}`)).toBe(1);
    const again = api.seen.filter(
      (s) =>
        s.method === 'GET' &&
        s.range !== `bytes=${PART}-${2 * PART - 1}` &&
        /^bytes=\d+-/.exec(s.range ?? '') &&
        Number(/^bytes=(\d+)-(\d+)$/.exec(s.range!)![2]) === 2 * PART - 1,
    );
    expect(again).toHaveLength(1);
    expect(Number(/^bytes=(\d+)-/.exec(again[0]!.range!)![1])).toBeGreaterThan(PART);
    await expect(
      c.downloadFile(id, join(dir, 'bad.bin'), { owner: OWNER, chunkSize: PART, sha256: '0'.repeat(64) }),
    ).rejects.toMatchObject({
      name: 'IntegrityError',
    });
  });

  it('holds a download against the Repr-Digest the service names, without being asked to', async () => {
    const { path, data } = file(2 * PART + 3);
    const c = client();
    const id = await c.uploadFile(path, { owner: OWNER });
    const digestOf = (b: Buffer) => `sha-256=:${createHash('sha256').update(b).digest('base64')}:`;
    api.reprDigest = digestOf;
    const good = await c.downloadFile(id, join(dir, 'named.bin'), { owner: OWNER, chunkSize: PART });
    expect(good.sha256).toBe(createHash('sha256').update(data).digest('hex'));
    api.reprDigest = () => digestOf(Buffer.from('other bytes'));
    await expect(
      c.downloadFile(id, join(dir, 'misnamed.bin'), { owner: OWNER, chunkSize: PART }),
    ).rejects.toMatchObject({
      name: 'IntegrityError',
      message: expect.stringContaining('Repr-Digest'),
    });
  });

  it('uploads a stream of unknown length: bytes a-b/* until the last part, which names the total', async () => {
    for (const size of [0, 1, PART, 3 * PART, 3 * PART + 17]) {
      api.seen.length = 0;
      const data = randomBytes(size);
      const chunks = Array.from({ length: Math.ceil(size / 1000) }, (_, i) => data.subarray(i * 1000, (i + 1) * 1000));
      const progress: (number | null)[] = [];
      const spoolDir = mkdtempSync(join(dir, 'spool-'));
      const id = await client().uploadStream(Readable.from(chunks), {
        owner: OWNER,
        concurrency: 2,
        spoolDir,
        onProgress: (p) => progress.push(p.total),
      });
      expect(api.bytesOf(id).equals(data)).toBe(true);
      // the parts waited on disk, and nothing of them is left
      expect(await readdir(spoolDir)).toEqual([]);
      const ranges = api.seen.filter((s) => s.method === 'POST' || s.method === 'PUT').map((s) => s.range);
      if (size === 0) expect(ranges).toEqual([undefined]);
      else {
        const last = `bytes ${Math.floor((size - 1) / PART) * PART}-${size - 1}/${size}`;
        expect(ranges).toContain(last);
        expect(ranges.filter((r) => r !== last).every((r) => r!.endsWith('/*'))).toBe(true);
        expect(ranges).toHaveLength(Math.ceil(size / PART));
      }
      expect(progress[progress.length - 1]).toBe(size);
    }
  });

  it('refuses a stream whose length differs from the one announced', async () => {
    const data = randomBytes(2 * PART + 1);
    const spoolDir = mkdtempSync(join(dir, 'spool-'));
    await expect(
      client().uploadStream(Readable.from([data]), { owner: OWNER, size: 2 * PART, spoolDir }),
    ).rejects.toMatchObject({ name: 'IntegrityError' });
    expect(await readdir(spoolDir)).toEqual([]);
  });
});

describe('cutting a stream into parts', () => {
  it('gives parts of the part size (the last shorter) in files that concatenate to the stream, only the last marked last', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'spool-test-'));
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.integer({ min: 0, max: 300 }), { maxLength: 20 }),
          fc.integer({ min: 1, max: 200 }),
          async (sizes, size) => {
            const chunks = sizes.map((n) => randomBytes(n));
            const whole = Buffer.concat(chunks);
            const parts = [];
            const contents: Buffer[] = [];
            for await (const p of spooledParts(Readable.from(chunks), size, dir)) {
              parts.push(p);
              contents.push(await readFile(p.path));
              await rm(p.path);
            }
            expect(Buffer.concat(contents).equals(whole)).toBe(true);
            parts.forEach((p, i) => {
              expect(p.start).toBe(i * size);
              expect(p.length).toBe(contents[i]!.length);
              expect(p.last).toBe(i === parts.length - 1);
              if (!p.last) expect(p.length).toBe(size);
              else expect(p.length).toBeGreaterThan(0);
            });
            expect(parts.length).toBe(Math.ceil(whole.length / size));
            expect(await readdir(dir)).toEqual([]);
          },
        ),
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
