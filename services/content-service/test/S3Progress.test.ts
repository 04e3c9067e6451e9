import { PassThrough } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { StorageTimeout, watchedDownload, watchedUpload } from '../src/store/ObjectStore';

describe('watchedDownload (the stall watch on an S3 body)', () => {
  it('fails a body S3 stops sending while the reader waits', async () => {
    const source = new PassThrough();
    source.write(Buffer.alloc(10));
    const body = watchedDownload(source, 300);
    const chunks: Buffer[] = [];
    const failed = new Promise<unknown>((resolve) => body.on('error', resolve));
    body.on('data', (c: Buffer) => chunks.push(c));
    expect(await failed).toBeInstanceOf(StorageTimeout);
    expect(Buffer.concat(chunks).length).toBe(10);
  });

  it('does not fail a body S3 has sent whole, however long the reader takes over the rest', async () => {
    const source = new PassThrough(); // as an S3 answer: the socket pushes its bytes, read or not
    const body = watchedDownload(source, 200);
    source.end(Buffer.alloc(1000));
    let error: unknown = null;
    body.on('error', (e) => (error = e));
    await sleep(700); // nobody reads: the bytes wait here, S3 is done
    const chunks: Buffer[] = [];
    for await (const c of body) chunks.push(c as Buffer);
    expect(error).toBeNull();
    expect(Buffer.concat(chunks).length).toBe(1000);
  });

  it('ends quietly, without an unhandled error, when nobody listens for one', async () => {
    const source = new PassThrough();
    const body = watchedDownload(source, 200);
    const closed = new Promise((resolve) => body.once('close', resolve));
    await closed; // an 'error' with no listener would have thrown out of the process here
    expect(body.destroyed).toBe(true);
    expect(source.destroyed).toBe(true);
  }, 10_000);
});

describe('watchedUpload (the stall watch on a body sent to S3)', () => {
  it('reports a stall when bytes wait and S3 takes none, and ends the watch on stop', async () => {
    const body = new PassThrough({ highWaterMark: 16 });
    const stalls: unknown[] = [];
    const { stop } = watchedUpload(body, 200, (e) => stalls.push(e));
    body.write(Buffer.alloc(64)); // nobody reads: the bytes wait for "S3"
    await sleep(600);
    stop();
    expect(stalls.length).toBeGreaterThan(0);
    expect(stalls[0]).toBeInstanceOf(StorageTimeout);
  });

  it('does not blame S3 for a client that is slow to send', async () => {
    const body = new PassThrough();
    const stalls: unknown[] = [];
    const { stop } = watchedUpload(body, 200, (e) => stalls.push(e));
    const taken: Buffer[] = [];
    body.on('data', (c: Buffer) => taken.push(c)); // "S3" takes everything at once
    body.write(Buffer.alloc(10));
    await sleep(600); // and the client sends nothing more for a while
    body.end(Buffer.alloc(5));
    await sleep(50);
    stop();
    expect(stalls).toEqual([]);
    expect(Buffer.concat(taken).length).toBe(15);
  });
});
