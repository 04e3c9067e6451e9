// What a body gives in one turn of the event loop reaches the response's socket as one write.
import { once } from 'node:events';
import { createServer, request, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { coalesceWrites, sendBody } from '../src/coalescedWrites';

const CHUNK = 16 * 1024;
const chunks = Array.from({ length: 3 }, (_, i) => Buffer.alloc(CHUNK, 97 + i));

async function serve(handler: (res: ServerResponse) => Promise<void>): Promise<{ server: Server; url: string }> {
  const server = createServer({ highWaterMark: 256 * 1024 }, (_req, res) => void handler(res));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { server, url: `http://127.0.0.1:${(server.address() as { port: number }).port}/` };
}

function get(url: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    request(url, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => resolve(Buffer.concat(parts)));
      res.on('error', reject);
    })
      .on('error', reject)
      .end();
  });
}

describe('coalesceWrites', () => {
  let server: Server;
  afterEach(() => server?.close());

  it('sends the chunks a body gives in one turn as one writev, every byte in order, and uncorks', async () => {
    const writes: number[] = [];
    let socket: Socket | null = null;
    ({ server } = await serve(async (res) => {
      socket = res.socket!;
      const writev = socket._writev!.bind(socket);
      socket._writev = (batch, cb) => {
        writes.push(batch.length);
        writev(batch, cb);
      };
      res.setHeader('content-length', String(CHUNK * chunks.length));
      const body = new Readable({ read() {} });
      coalesceWrites(body, res);
      const piped = pipeline(body, res);
      // One turn, three callbacks: as a ready socket read three times, each read its own callback
      // (process.nextTick runs between them, so Node's own cork of a response write ends each time).
      for (const c of chunks) setImmediate(() => body.push(c));
      setTimeout(() => body.push(null), 20);
      await piped;
    }));
    const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/`;
    const got = await get(url);
    expect(got.equals(Buffer.concat(chunks))).toBe(true);
    // The three chunks (and the head) in one writev.
    expect(writes.some((n) => n >= chunks.length)).toBe(true);
    expect(socket!.writableCorked).toBe(0);
  });
});

describe('sendBody', () => {
  let server: Server;
  afterEach(() => {
    server?.closeAllConnections();
    server?.close();
  });

  it('resolves once the whole body is sent, every byte in order', async () => {
    let settled: Promise<string> = Promise.resolve('not called');
    ({ server } = await serve(async (res) => {
      res.setHeader('content-length', String(CHUNK * chunks.length));
      settled = sendBody(Readable.from(chunks), res).then(() => 'resolved');
      await settled.catch(() => undefined);
    }));
    const got = await get(`http://127.0.0.1:${(server.address() as { port: number }).port}/`);
    expect(got.equals(Buffer.concat(chunks))).toBe(true);
    await expect(settled).resolves.toBe('resolved');
  });

  it('rejects and destroys the body when the client goes away mid-body', async () => {
    let body: Readable | null = null;
    let settled: Promise<unknown> = Promise.resolve();
    ({ server } = await serve(async (res) => {
      // An endless body: only the connection closing can end it.
      body = new Readable({
        read() {
          this.push(Buffer.alloc(CHUNK, 1));
        },
      });
      res.setHeader('content-length', String(1024 * 1024 * 1024));
      settled = sendBody(body, res);
      await settled.catch(() => undefined);
    }));
    await new Promise<void>((resolve, reject) => {
      request(`http://127.0.0.1:${(server.address() as { port: number }).port}/`, (res) => {
        res.once('data', () => {
          res.destroy();
          resolve();
        });
      })
        .on('error', () => undefined)
        .on('error', reject)
        .end();
    });
    await expect(settled).rejects.toThrow(/closed before the response was sent/);
    expect(body!.destroyed).toBe(true);
  });

  it('rejects and drops the connection when the body fails mid-stream', async () => {
    let settled: Promise<unknown> = Promise.resolve();
    ({ server } = await serve(async (res) => {
      let sent = 0;
      const body = new Readable({
        read() {
          if (sent++ < 2) this.push(Buffer.alloc(CHUNK, 1));
          else this.destroy(new Error('S3 broke off'));
        },
      });
      res.setHeader('content-length', String(CHUNK * 10));
      settled = sendBody(body, res);
      await settled.catch(() => undefined);
    }));
    const outcome = await new Promise<string>((resolve) => {
      request(`http://127.0.0.1:${(server.address() as { port: number }).port}/`, (res) => {
        res.on('data', () => undefined);
        res.on('end', () => resolve('ended'));
        res.on('error', () => resolve('broken off'));
        res.on('aborted', () => resolve('broken off'));
      })
        .on('error', () => resolve('broken off'))
        .end();
    });
    expect(outcome).toBe('broken off');
    await expect(settled).rejects.toThrow('S3 broke off');
  });
});
