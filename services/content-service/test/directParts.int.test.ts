import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { ServiceError } from '@cp/errors';
import { Presigner } from '../src/store/Presigner';
import { contentKey } from '../src/uploads/PartGrid';
import { PartAssembler } from '../src/uploads/PartAssembler';
import { UploadService } from '../src/uploads/UploadService';
import { useRealStores } from './support/realStores';

/** Parts sent straight to S3 with presigned URLs, against real S3 (versitygw) and Redis: what the URL binds, and recording them. */
describe('direct parts', () => {
  const stores = useRealStores('direct-parts', () => new Date());
  const owner = '1a2b3c4d-0b0a-4909-8807-060504030201';
  const P = 64 * 1024 * 1024;
  let direct: UploadService;
  let shortLived: UploadService;

  const service = (lifetimeSeconds: number) =>
    new UploadService(
      {
        book: stores.book,
        objects: stores.objects,
        assembler: new PartAssembler(stores.objects),
        logger: stores.logger,
        presigner: new Presigner(stores.s3, stores.namespace, lifetimeSeconds),
      },
      { uploadTtlMs: 60_000, completionLeaseMs: 60_000, assemblyLeaseMs: 60_000 },
    );

  beforeAll(() => {
    direct = service(300);
    shortLived = service(1);
  });

  /** A content of `total` bytes created by a POST of its final part (aligned) through the service. */
  async function created(total: number, tail: Buffer): Promise<string> {
    const start = total - tail.length;
    const outcome = await direct.write({
      ownerId: owner,
      contentId: null,
      range: { start, end: total - 1, total },
      declaredLength: tail.length,
      contentType: null,
      body: Readable.from([tail]),
    });
    return outcome.id;
  }

  const send = (target: { url: string; headers: Record<string, string> }, body: Buffer, headers = target.headers) =>
    fetch(target.url, { method: 'PUT', body, headers });

  it('binds a URL to its part length: a PUT of another length is refused by S3', async () => {
    const id = await created(2 * P + 10, Buffer.alloc(10, 1));
    const [target] = await direct.direct.targets(owner, id, [{ part: 3 }]);
    expect(target).toMatchObject({ part: 3, method: 'PUT', headers: { 'content-length': '10' } });
    const short = await send(target!, Buffer.alloc(9, 2), {});
    expect(short.status).toBe(403);
    const long = await send(target!, Buffer.alloc(11, 2), {});
    expect(long.status).toBe(403);
    const exact = await send(target!, Buffer.alloc(10, 2));
    expect(exact.status).toBe(200);
    expect(exact.headers.get('etag')).toMatch(/^"[0-9a-f]+"$/);
  });

  it('refuses an expired URL', async () => {
    const id = await created(P + 10, Buffer.alloc(10, 1));
    const [target] = await shortLived.direct.targets(owner, id, [{ part: 2 }]);
    await new Promise((r) => setTimeout(r, 2_100));
    const late = await send(target!, Buffer.alloc(10, 3));
    expect(late.status).toBe(403);
    expect(await late.text()).toMatch(/expired/i);
  });

  it('binds a URL to the SHA-256 it was asked with: other bytes (or no checksum header) are refused by S3', async () => {
    const id = await created(P + 10, Buffer.alloc(10, 1));
    const bytes = Buffer.alloc(10, 4);
    const sha256 = createHash('sha256').update(bytes).digest();
    const [target] = await direct.direct.targets(owner, id, [{ part: 2, sha256 }]);
    expect(target!.headers['x-amz-checksum-sha256']).toBe(sha256.toString('base64'));
    expect((await send(target!, Buffer.alloc(10, 5))).status).toBe(400); // BadDigest
    expect((await send(target!, bytes, { 'content-length': '10' })).status).toBe(403); // the header is signed
    expect((await send(target!, bytes)).status).toBe(200);
  });

  it('records a part only when S3 holds it with that ETag and length', async () => {
    const id = await created(P + 10, Buffer.alloc(10, 1));
    const record = (await stores.book.find(id))!;
    await expect(direct.direct.confirm(owner, id, 1, '"0123456789abcdef0123456789abcdef"')).rejects.toMatchObject({
      code: 'directPartMissing',
    });
    const [target] = await direct.direct.targets(owner, id, [{ part: 1 }]);
    const sent = await send(target!, Buffer.alloc(P, 6));
    expect(sent.status).toBe(200);
    await expect(direct.direct.confirm(owner, id, 1, '"ffffffffffffffffffffffffffffffff"')).rejects.toMatchObject({
      code: 'directPartMissing',
    });
    expect(await direct.status.received(record)).toEqual({ total: P + 10, ranges: [{ a: P, b: P + 9 }] });
    const done = await direct.direct.confirm(owner, id, 1, sent.headers.get('etag')!);
    expect(done).toEqual({ id, completedNow: true, completed: true });
    expect(await stores.lookup(owner, id)).toMatchObject({ state: 'ready', total: P + 10 });
  });

  it('completes exactly once when two requests confirm the last part at the same time', async () => {
    const id = await created(P + 10, Buffer.alloc(10, 1));
    const [target] = await direct.direct.targets(owner, id, [{ part: 1 }]);
    const sent = await send(target!, Buffer.alloc(P, 7));
    const etag = sent.headers.get('etag')!;
    // Two services (as two replicas) share the bookkeeping; each confirms the part.
    const other = service(300);
    const outcomes = await Promise.allSettled([
      direct.direct.confirm(owner, id, 1, etag),
      other.direct.confirm(owner, id, 1, etag),
    ]);
    const completions = outcomes.filter((o) => o.status === 'fulfilled' && o.value.completedNow);
    expect(completions).toHaveLength(1);
    for (const o of outcomes) {
      if (o.status === 'rejected') {
        expect(o.reason).toBeInstanceOf(ServiceError);
        expect(['partWriting', 'contentCompleting', 'contentAlreadyComplete']).toContain(
          (o.reason as ServiceError).code,
        );
      }
    }
    expect(await stores.lookup(owner, id)).toMatchObject({ state: 'ready', total: P + 10 });
    const head = await stores.objects.head(contentKey(owner, id));
    expect(head?.contentLength).toBe(P + 10);
    // Afterwards: the content takes no more parts.
    await expect(direct.direct.confirm(owner, id, 1, etag)).rejects.toMatchObject({ code: 'contentAlreadyComplete' });
    await expect(direct.direct.targets(owner, id, [{ part: 1 }])).rejects.toMatchObject({
      code: 'contentAlreadyComplete',
    });
  });

  it('completes exactly once, 5 times over, when three confirmations of the last part race on two services', async () => {
    const other = service(300);
    const head = Buffer.alloc(P, 3);
    for (let round = 0; round < 5; round++) {
      const created = await direct.write({
        ownerId: owner,
        contentId: null,
        range: { start: 0, end: P - 1, total: P + 10 },
        declaredLength: P,
        contentType: null,
        body: Readable.from([head]),
      });
      const [target] = await direct.direct.targets(owner, created.id, [{ part: 2 }]);
      const etag = (await send(target!, Buffer.alloc(10, round))).headers.get('etag')!;
      const outcomes = await Promise.allSettled([
        direct.direct.confirm(owner, created.id, 2, etag),
        other.direct.confirm(owner, created.id, 2, etag),
        other.direct.confirm(owner, created.id, 2, etag),
      ]);
      expect(outcomes.filter((o) => o.status === 'fulfilled' && o.value.completedNow)).toHaveLength(1);
      for (const o of outcomes)
        if (o.status === 'rejected')
          expect(['partWriting', 'contentCompleting', 'contentAlreadyComplete', 'contentBusy']).toContain(
            (o.reason as ServiceError).code,
          );
      expect(await stores.lookup(owner, created.id)).toMatchObject({ state: 'ready', total: P + 10 });
    }
  });

  it('still guards completion when a URL is used again after its part was recorded: the part is dropped and sent again', async () => {
    const total = 2 * P + 10;
    const id = await created(total, Buffer.alloc(10, 1));
    const record = (await stores.book.find(id))!;
    const [target] = await direct.direct.targets(owner, id, [{ part: 1 }]);
    const first = Buffer.alloc(P, 8);
    const sent = await send(target!, first);
    expect((await direct.direct.confirm(owner, id, 1, sent.headers.get('etag')!)).completedNow).toBe(false);
    // The same URL, still valid, writes other bytes into part 1 after it was recorded.
    expect((await send(target!, Buffer.alloc(P, 9))).status).toBe(200);
    const last = await direct.write({
      ownerId: owner,
      contentId: id,
      range: { start: P, end: 2 * P - 1, total },
      declaredLength: P,
      contentType: null,
      body: Readable.from([Buffer.alloc(P, 2)]),
    });
    expect(last.completedNow).toBe(false);
    expect(await direct.status.received(record)).toEqual({ total, ranges: [{ a: P, b: total - 1 }] });
    const again = await send((await direct.direct.targets(owner, id, [{ part: 1 }]))[0]!, first);
    expect((await direct.direct.confirm(owner, id, 1, again.headers.get('etag')!)).completedNow).toBe(true);
    const stored = await stores.objects.getRange(contentKey(owner, id), P - 2, P + 1);
    const chunks: Buffer[] = [];
    for await (const c of stored.body) chunks.push(c as Buffer);
    expect(Buffer.concat(chunks)).toEqual(Buffer.from([8, 8, 2, 2]));
  });

  it('refuses another owner (404), an unknown total (409) and a part the content does not have (400); disabled: 501', async () => {
    const id = await created(P + 10, Buffer.alloc(10, 1));
    await expect(
      direct.direct.targets('9a2b3c4d-0b0a-4909-8807-060504030201', id, [{ part: 1 }]),
    ).rejects.toMatchObject({
      code: 'contentNotFound',
    });
    await expect(direct.direct.targets(owner, id, [{ part: 3 }])).rejects.toMatchObject({ code: 'invalidDirectParts' });
    // A part that holds a range sent in pieces through the service: refused before any byte travels.
    await direct.write({
      ownerId: owner,
      contentId: id,
      range: { start: 0, end: 9, total: P + 10 },
      declaredLength: 10,
      contentType: null,
      body: Readable.from([Buffer.alloc(10)]),
    });
    await expect(direct.direct.targets(owner, id, [{ part: 1 }])).rejects.toMatchObject({ code: 'rangeOverlap' });
    const open = await direct.write({
      ownerId: owner,
      contentId: null,
      range: { start: 0, end: 9, total: null },
      declaredLength: 10,
      contentType: null,
      body: Readable.from([Buffer.alloc(10)]),
    });
    await expect(direct.direct.targets(owner, open.id, [{ part: 1 }])).rejects.toMatchObject({ code: 'totalUnknown' });
    await expect(stores.uploads.direct.targets(owner, id, [{ part: 1 }])).rejects.toMatchObject({
      code: 'directTransferDisabled',
    });
  });
});
