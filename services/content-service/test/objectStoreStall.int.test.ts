// The stall watchdog of streamed S3 writes blames S3 only: a client that pauses longer than the
// stall timeout does not fail its part, while an S3 that takes no bytes does (outages.e2e.test.ts
// stops a real S3 for that side; here the S3 server is a TCP listener that never reads).
import { once } from 'node:events';
import { createServer, type Server, type Socket } from 'node:net';
import { PassThrough } from 'node:stream';
import { ObjectStore, StorageTimeout, isS3Unavailable } from '../src/store/ObjectStore';
import { testS3Client } from './support/realStores';

const s3 = (endpoint: string) => testS3Client(endpoint, { maxAttempts: 1 });

describe('ObjectStore stall timeout', () => {
  const { prefix } = JSON.parse(process.env.CP_TEST_STACK!) as { prefix: string };
  const bucket = `${prefix}-stall`;
  const real = s3(process.env.S3_ENDPOINT!);

  afterAll(() => real.destroy());

  it('keeps a download whose reader pauses longer than the stall timeout', async () => {
    const store = new ObjectStore(real, bucket, { stallMs: 500, callMs: 3_000 });
    await store.ensureBucket();
    const bytes = Buffer.alloc(4 * 1024 * 1024, 3);
    await store.putObject(
      'read-slowly',
      PassThrough.from([bytes]) as unknown as PassThrough,
      bytes.length,
      'application/octet-stream',
    );
    const stored = await store.getRange('read-slowly', 0, bytes.length - 1);
    let got = 0;
    for await (const chunk of stored.body) {
      if (got === 0) await new Promise((r) => setTimeout(r, 1_500)); // a reader silent for three stall timeouts
      got += (chunk as Buffer).length;
    }
    expect(got).toBe(bytes.length);
  });

  it('keeps a part whose client pauses longer than the stall timeout', async () => {
    const store = new ObjectStore(real, bucket, { stallMs: 500, callMs: 3_000 });
    await store.ensureBucket();
    const body = new PassThrough();
    const chunk = Buffer.alloc(64 * 1024, 7);
    const put = store.putObject('paused', body, 2 * chunk.length, 'application/octet-stream');
    body.write(chunk);
    await new Promise((r) => setTimeout(r, 1_500)); // three stall timeouts of client silence
    body.end(chunk);
    await expect(put).resolves.toBeTruthy();
    expect((await store.head('paused'))?.contentLength).toBe(2 * chunk.length);
  });

  describe('against an S3 that accepts connections and never reads or answers', () => {
    let server: Server;
    const sockets: Socket[] = [];
    let endpoint: string;
    beforeAll(async () => {
      server = createServer((socket) => {
        sockets.push(socket);
        socket.pause();
      });
      server.listen(0, '127.0.0.1');
      await once(server, 'listening');
      endpoint = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    });
    afterAll(async () => {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    });

    it('fails a streamed part once S3 takes no bytes for the stall timeout', async () => {
      const client = s3(endpoint);
      const store = new ObjectStore(client, bucket, { stallMs: 500, callMs: 3_000 });
      const size = 32 * 1024 * 1024; // more than the socket buffers hold
      const body = new PassThrough();
      const started = performance.now();
      const put = store.putObject('never', body, size, 'application/octet-stream');
      const chunk = Buffer.alloc(1024 * 1024);
      for (let i = 0; i < 32; i++) body.write(chunk); // the client sent it all: only S3 holds it up
      body.end();
      const error = await put.catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StorageTimeout);
      expect(isS3Unavailable(error)).toBe(true);
      expect(performance.now() - started).toBeLessThan(3_000);
      client.destroy();
    });

    it('fails a download whose body S3 stops sending, while the reader waits', async () => {
      const stalling = createServer((socket) => {
        sockets.push(socket);
        socket.once('data', () =>
          socket.write(
            'HTTP/1.1 206 Partial Content\r\nContent-Length: 1000000\r\nContent-Range: bytes 0-999999/1000000\r\n\r\n' +
              'x'.repeat(1000),
          ),
        );
      });
      stalling.listen(0, '127.0.0.1');
      await once(stalling, 'listening');
      const client = s3(`http://127.0.0.1:${(stalling.address() as { port: number }).port}`);
      const store = new ObjectStore(client, bucket, { stallMs: 500, callMs: 3_000 });
      const stored = await store.getRange('stalls', 0, 999_999);
      const started = performance.now();
      let got = 0;
      const error = await (async () => {
        for await (const chunk of stored.body) got += (chunk as Buffer).length;
      })().catch((e: unknown) => e);
      expect(got).toBe(1000);
      expect(error).toBeInstanceOf(StorageTimeout);
      expect(performance.now() - started).toBeLessThan(1_500);
      client.destroy();
      stalling.close();
    });

    it('fails a call without a body once S3 does not answer within the call timeout', async () => {
      const client = s3(endpoint);
      const store = new ObjectStore(client, bucket, { stallMs: 500, callMs: 700 });
      const started = performance.now();
      const error = await store.head('anything').catch((e: unknown) => e);
      expect(error).toBeInstanceOf(StorageTimeout);
      expect(performance.now() - started).toBeLessThan(1_500);
      client.destroy();
    });
  });
});
