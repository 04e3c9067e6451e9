// What a body gives in one turn of the event loop reaches the response's socket as one write.
import { once } from 'node:events';
import { createServer, request, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { coalesceWrites } from '../src/coalescedWrites';

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
