import { PassThrough, Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { StorageTimeout, watchedDownload } from '../src/store/S3Progress';

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
    const source = Readable.from([Buffer.alloc(1000)]);
    const body = watchedDownload(source, 200);
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
