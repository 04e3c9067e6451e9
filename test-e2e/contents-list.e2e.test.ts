// GET /v1/{ownerId}/contents: an owner's contents, ready and unfinished, in id order, a page at a
// time with an opaque cursor. Paged to the end, a listing has every content once (no gap, no
// duplicate) in a stable order; another owner's contents never appear and do not change what a
// page costs.
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { call, contentsUrl, newOwner, postPart, rangeOf, type Answer } from './support/http';
import { tokenFor } from './support/stack';

interface Item {
  id: string;
  state: 'ready' | 'uploading';
  size: number | null;
  'content-type': string;
  'created-at': string | null;
  'completed-at': string | null;
  'repr-digest': string | null;
  uploader: string | null;
}
interface Page {
  items: Item[];
  'next-cursor': string | null;
}

const READY = 5000;

describe('listing an owner’s contents', () => {
  const owner = newOwner();
  const other = newOwner();
  let token: string;
  let otherToken: string;
  const ready = new Map<string, number>(); // id → size
  const uploading = new Map<string, number | null>(); // id → total, when named

  /** `count` one-shot POSTs of a few bytes, 32 in flight; their ids. */
  async function createMany(as: string, tok: string, count: number): Promise<Map<string, number>> {
    const made = new Map<string, number>();
    let next = 0;
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        while (next < count) {
          const size = 1 + (next++ % 7);
          const r = await postPart(as, tok, randomBytes(size), null, 'text/plain');
          expect(r.status).toBe(201);
          made.set(r.json().id as string, size);
        }
      }),
    );
    return made;
  }

  const list = (query: string, as = owner, tok = token): Promise<Answer> =>
    call(`${contentsUrl(as)}${query}`, { token: tok });

  /** Every page from the start with `limit`; the items in order, and each page's time in ms. */
  async function listAll(limit: number, maxPages = 10_000): Promise<{ items: Item[]; ms: number[] }> {
    const items: Item[] = [];
    const ms: number[] = [];
    let cursor: string | null = null;
    for (let pages = 0; pages < maxPages; pages++) {
      const started = performance.now();
      const r = await list(`?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      ms.push(performance.now() - started);
      expect(r.status).toBe(200);
      expect(r.headers.get('content-type')).toBe('application/json; charset=utf-8');
      const page = r.json() as Page;
      expect(page.items.length).toBeLessThanOrEqual(limit);
      items.push(...page.items);
      cursor = page['next-cursor'];
      if (cursor === null) break;
    }
    return { items, ms };
  }

  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

  beforeAll(async () => {
    [token, otherToken] = await Promise.all([tokenFor([owner]), tokenFor([other])]);
    for (const [id, size] of await createMany(owner, token, READY)) ready.set(id, size);
    for (let i = 0; i < 30; i++) {
      const total = i % 3 === 0 ? '*' : 300;
      const r = await postPart(owner, token, randomBytes(100), rangeOf(0, 100, total), 'application/x-test');
      expect(r.status).toBe(201);
      uploading.set(r.json().id as string, total === '*' ? null : total);
    }
  });

  it('pages to the end with limit 1000: every content once, in id order, ready and uploading as they are', async () => {
    const { items, ms } = await listAll(1000);
    const ids = items.map((i) => i.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toEqual([...ready.keys(), ...uploading.keys()].sort());
    for (const item of items) {
      if (ready.has(item.id)) {
        expect(item).toMatchObject({
          state: 'ready',
          size: ready.get(item.id),
          'content-type': 'text/plain',
          uploader: `bearer:${owner}`,
        });
        expect(item['repr-digest']).toMatch(/crc64nvme=:[A-Za-z0-9+/]{11}=:/);
        expect(Date.parse(item['completed-at']!)).not.toBeNaN();
        expect(Date.parse(item['created-at']!)).not.toBeNaN();
      } else {
        expect(item).toEqual({
          id: item.id,
          state: 'uploading',
          size: uploading.get(item.id),
          'content-type': 'application/x-test',
          'created-at': expect.any(String),
          'completed-at': null,
          'repr-digest': null,
          uploader: `bearer:${owner}`,
        });
      }
    }
    process.stdout.write(
      `listing ${items.length} contents, limit 1000: ${ms.length} pages, median ${median(ms).toFixed(0)} ms per page (${ms.map((m) => m.toFixed(0)).join(', ')})\n`,
    );
  });

  it('pages with limit 7 through the same order, and the same order again (stable)', async () => {
    const whole = (await listAll(1000)).items.map((i) => i.id);
    const small = (await listAll(7, 40)).items.map((i) => i.id);
    expect(small).toEqual(whole.slice(0, 7 * 40));
    // A cursor from the middle goes on right after the id it came from.
    const first = (await list('?limit=7')).json() as Page;
    const second = (await list(`?limit=7&cursor=${first['next-cursor']!}`)).json() as Page;
    expect(second.items.map((i) => i.id)).toEqual(whole.slice(7, 14));
    expect(((await list('')).json() as Page).items.map((i) => i.id)).toEqual(whole.slice(0, 100));
  });

  /** The median time of a full page of 1000 over three listings to the end. */
  async function pageTime(): Promise<number> {
    const ms: number[] = [];
    for (let i = 0; i < 3; i++) ms.push(...(await listAll(1000)).ms.slice(0, 5));
    return median(ms);
  }

  it('costs the same per page with 5,000 contents of another owner, which never appear', async () => {
    const before = await pageTime();
    const others = await createMany(other, otherToken, READY);
    const after = await pageTime();
    const { items } = await listAll(1000);
    expect(items.filter((i) => others.has(i.id))).toEqual([]);
    expect(items).toHaveLength(ready.size + uploading.size);
    const theirs = (await list('?limit=1000', other, otherToken)).json() as Page;
    expect(theirs.items.every((i) => others.has(i.id))).toBe(true);
    process.stdout.write(
      `a page of 1000 (HeadObject per ready item, 16 at once): median ${before.toFixed(0)} ms without, ${after.toFixed(0)} ms with 5,000 contents of another owner (15 pages each)\n`,
    );
    // Loose: the listing must not read the other owner's contents (that would be several times slower).
    expect(after).toBeLessThan(4 * before + 2000);
  });

  it('drops a deleted content, and lists a completed upload once, as ready', async () => {
    const [gone] = [...ready.keys()];
    expect((await call(contentsUrl(owner, gone), { method: 'DELETE', token })).status).toBe(204);
    ready.delete(gone!);
    const [finishing] = [...uploading].find(([, total]) => total === 300)!;
    const done = await call(contentsUrl(owner, finishing), {
      method: 'PUT',
      body: randomBytes(200),
      headers: { 'content-range': rangeOf(100, 300, 300) },
      token,
    });
    expect(done.status).toBe(201);
    const items = (await listAll(1000)).items;
    expect(items.find((i) => i.id === gone)).toBeUndefined();
    expect(items.filter((i) => i.id === finishing)).toEqual([
      expect.objectContaining({ state: 'ready', size: 300, 'content-type': 'application/x-test' }),
    ]);
  });

  it('refuses a bad limit or cursor with 400, and another owner’s credentials with 403', async () => {
    const code = (r: Answer) => `${r.status} ${r.headers.get('x-error-id')}`;
    for (const limit of ['0', '1001', 'abc', '-1', '1.5', ''])
      expect(code(await list(`?limit=${limit}`))).toBe('400 urn:error:contents:invalidLimit');
    expect(code(await list('?limit=1&limit=2'))).toBe('400 urn:error:contents:invalidLimit');
    for (const cursor of ['nonsense', 'bm90LWEtdXVpZA', '%E2%9C%93'])
      expect(code(await list(`?cursor=${cursor}`))).toBe('400 urn:error:contents:invalidCursor');
    expect((await list('', owner, otherToken)).status).toBe(403);
    expect(await list('?limit=1', newOwner(), await tokenFor([]))).toMatchObject({ status: 403 });
  });

  it('lists nothing for an owner without contents', async () => {
    const nobody = newOwner();
    const r = await list('', nobody, await tokenFor([nobody]));
    expect(r.json()).toEqual({ items: [], 'next-cursor': null });
  });
});
