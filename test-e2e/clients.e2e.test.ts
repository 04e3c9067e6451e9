import { randomBytes } from 'node:crypto';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { testS3Client, testStack, tokenFor } from './support/stack';
import { contentsUrl, newOwner, P, sha256 } from './support/http';
import { parseStrictContentRange, send } from './support/clients';

const MiB = 1024 * 1024;
const SIZES: [string, number][] = [
  ['0 B', 0],
  ['1 B', 1],
  ['1 MiB', MiB],
  ['1 MiB + 1', MiB + 1],
  ['64 MiB - 1', P - 1],
  ['64 MiB', P],
  ['64 MiB + 1', P + 1],
  ['130 MiB', 130 * MiB],
];

describe('request sequences of the official clients, through the gateway', () => {
  const owner = newOwner();
  let auth: Record<string, string>;
  beforeAll(async () => {
    auth = { authorization: `Bearer ${await tokenFor([owner])}` };
  });

  /** C#: ≤ 1 MiB in one POST; else POST the first MiB, then PUT each further MiB in order; no Content-Type. */
  async function csharpUpload(data: Buffer): Promise<string> {
    const n = data.length;
    if (n === 0) {
      const r = await send('POST', contentsUrl(owner), auth, data);
      expect(r.status).toBe(201);
      return JSON.parse(r.body.toString()).id;
    }
    const first = Math.min(n, MiB);
    const created = await send(
      'POST',
      contentsUrl(owner),
      { ...auth, 'content-range': `bytes 0-${first - 1}/${n}` },
      data.subarray(0, first),
    );
    expect(created.status).toBe(201);
    const { id } = JSON.parse(created.body.toString());
    let chunkNo = 0;
    for (let a = MiB; a < n; a += MiB) {
      const b = Math.min(a + MiB, n) - 1;
      const last = b === n - 1;
      // every third chunk goes chunked, as the C# client sometimes does
      const r = await send(
        'PUT',
        contentsUrl(owner, id),
        { ...auth, 'content-range': `bytes ${a}-${b}/${n}` },
        data.subarray(a, b + 1),
        {
          chunked: chunkNo++ % 3 === 1,
        },
      );
      expect([last ? 201 : 200, r.body.toString()]).toEqual([r.status, r.body.toString()]);
      expect(JSON.parse(r.body.toString())).toEqual({ id, content: { id }, 'is-completed': last });
    }
    return id;
  }

  /** C#: GETs of 1 MiB with `Range: bytes=a-b`, the first `bytes=0-1048575`; the total from Content-Range. */
  async function csharpDownload(id: string): Promise<Buffer> {
    const first = await send('GET', contentsUrl(owner, id), { ...auth, range: `bytes=0-${MiB - 1}` });
    if (first.status === 416) {
      // an empty content has no range to serve; the answer still names its total
      expect(first.headers['content-range']).toBe('bytes */0');
      return Buffer.alloc(0);
    }
    expect(first.status).toBe(206);
    const { a, b, total } = parseStrictContentRange(first.headers['content-range']);
    expect([a, b]).toEqual([0, Math.min(MiB, total) - 1]);
    const parts = [first.body];
    for (let start = MiB; start < total; start += MiB) {
      const r = await send('GET', contentsUrl(owner, id), { ...auth, range: `bytes=${start}-${start + MiB - 1}` });
      expect(r.status).toBe(206);
      const cr = parseStrictContentRange(r.headers['content-range']);
      expect(cr).toEqual({ a: start, b: Math.min(start + MiB, total) - 1, total });
      parts.push(r.body);
    }
    return Buffer.concat(parts);
  }

  describe('the C# client', () => {
    it.each(SIZES)('round-trips %s', async (_name, size) => {
      const data = randomBytes(size);
      const id = await csharpUpload(data);
      const back = await csharpDownload(id);
      expect(back.length).toBe(size);
      expect(sha256(back)).toBe(sha256(data));
    });
  });

  describe('the Java client', () => {
    it.each(SIZES.filter(([, size]) => size <= P))(
      'round-trips %s: one POST, bytes=0-1 for the total, then a GET without Range',
      async (_name, size) => {
        const data = randomBytes(size);
        const created = await send('POST', contentsUrl(owner), auth, data);
        expect(created.status).toBe(201);
        const { id } = JSON.parse(created.body.toString());
        const probe = await send('GET', contentsUrl(owner, id), { ...auth, range: 'bytes=0-1' });
        if (size === 0) {
          // nothing to serve a range of; Content-Range still tells the total
          expect(probe.status).toBe(416);
          expect(probe.headers['content-range']).toBe('bytes */0');
        } else {
          expect(probe.status).toBe(206);
          expect(parseStrictContentRange(probe.headers['content-range']).total).toBe(size);
        }
        const whole = await send('GET', contentsUrl(owner, id), auth);
        expect(whole.status).toBe(200);
        expect(sha256(whole.body)).toBe(sha256(data));
      },
    );

    it('sends a whole content chunked, without Content-Length', async () => {
      const data = randomBytes(3 * MiB + 17);
      const created = await send('POST', contentsUrl(owner), { ...auth, 'content-type': 'application/pdf' }, data, {
        chunked: true,
      });
      expect(created.status).toBe(201);
      const whole = await send('GET', contentsUrl(owner, JSON.parse(created.body.toString()).id), auth);
      expect(whole.headers['content-type']).toBe('application/pdf');
      expect(sha256(whole.body)).toBe(sha256(data));
    });

    it('is told 413 for a whole content above 64 MiB in one request', async () => {
      const r = await send('POST', contentsUrl(owner), auth, randomBytes(P + 1), { chunked: true });
      expect(r.status).toBe(413);
    });
  });

  describe('clients that do not know the total yet, retry, or mix part sizes', () => {
    it('takes bytes a-b/* until the last request names the total', async () => {
      const n = 5 * MiB + 123;
      const data = randomBytes(n);
      const created = await send(
        'POST',
        contentsUrl(owner),
        { ...auth, 'content-range': `bytes 0-${MiB - 1}/*` },
        data.subarray(0, MiB),
      );
      const { id } = JSON.parse(created.body.toString());
      for (let a = MiB; a < n; a += MiB) {
        const b = Math.min(a + MiB, n) - 1;
        const last = b === n - 1;
        const r = await send(
          'PUT',
          contentsUrl(owner, id),
          { ...auth, 'content-range': `bytes ${a}-${b}/${last ? n : '*'}` },
          data.subarray(a, b + 1),
        );
        expect(r.status).toBe(last ? 201 : 200);
      }
      const back = await send('GET', contentsUrl(owner, id), auth);
      expect(sha256(back.body)).toBe(sha256(data));
    });

    it('mixes 64 MiB parts and 1 MiB chunks, shuffled, with /* totals, a duplicate and a refused partial overlap', async () => {
      const n = 2 * P + 3 * MiB + 5;
      const data = randomBytes(n);
      type Piece = { a: number; b: number };
      const pieces: Piece[] = [{ a: 0, b: P - 1 }];
      for (let a = P; a < 2 * P; a += MiB) pieces.push({ a, b: a + MiB - 1 });
      pieces.push({ a: 2 * P, b: n - 1 });
      // deterministic shuffle
      let seed = 7;
      for (let i = pieces.length - 1; i > 0; i--) {
        seed = (seed * 1103515245 + 12345) % 2 ** 31;
        const j = seed % (i + 1);
        [pieces[i], pieces[j]] = [pieces[j]!, pieces[i]!];
      }
      const lastIndex = pieces.length - 1;
      const put = (p: Piece, total: number | '*', id?: string) =>
        send(
          id ? 'PUT' : 'POST',
          contentsUrl(owner, id),
          { ...auth, 'content-range': `bytes ${p.a}-${p.b}/${total}` },
          data.subarray(p.a, p.b + 1),
        );
      const created = await put(pieces[0]!, '*');
      expect(created.status).toBe(201);
      const { id } = JSON.parse(created.body.toString());
      const statuses: number[] = [];
      for (let i = 1; i < pieces.length; i++) {
        const p = pieces[i]!;
        if (i === 5) {
          // a duplicate of a chunk already sent: a retry, accepted
          const dup = await put(pieces[2]!, '*', id);
          expect(dup.status).toBe(200);
          // a partial overlap of received bytes: refused, nothing changed
          const overlap = await send(
            'PUT',
            contentsUrl(owner, id),
            { ...auth, 'content-range': `bytes ${pieces[2]!.a + 10}-${pieces[2]!.b + 10}/*` },
            randomBytes(pieces[2]!.b - pieces[2]!.a + 1),
          );
          expect(overlap.status).toBe(409);
        }
        const r = await put(p, i === lastIndex ? n : '*', id);
        statuses.push(r.status);
      }
      expect(statuses.slice(0, -1).every((s) => s === 200)).toBe(true);
      expect(statuses[statuses.length - 1]).toBe(201);
      const back = await send('GET', contentsUrl(owner, id), auth);
      expect(back.body.length).toBe(n);
      expect(sha256(back.body)).toBe(sha256(data));
    });

    it('deletes staged pieces once their parts are assembled, and keeps a piece the next part still needs', async () => {
      const stack = testStack();
      const s3 = testS3Client();
      const staged = async (id: string) =>
        (
          (await s3.send(new ListObjectsV2Command({ Bucket: `${stack.prefix}-contents`, Prefix: `staging/${id}/` })))
            .Contents ?? []
        ).map((o) => o.Key!.split('/')[2]!.split('.')[0]);
      // the content-service's counters, summed over the series whose line has every given label
      const metric = async (name: string, label = '') => {
        const text = await (await fetch(`${stack.services['content-service']!.adminUrl}/metrics`)).text();
        return text
          .split('\n')
          .filter((l) => l.startsWith(`${name}{`) && l.includes(label))
          .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
      };
      const before = {
        staged: await metric('content_pieces_staged_total'),
        assembled: await metric('content_parts_stored_total', 'via="assembled"'),
        completed: await metric('content_uploads_completed_total'),
      };
      try {
        // 3 MiB chunks: the one at 63 MiB holds the last MiB of part 1 and the first 2 MiB of part 2
        const n = P + 5 * MiB;
        const chunk = 3 * MiB;
        const data = randomBytes(n);
        const created = await send(
          'POST',
          contentsUrl(owner),
          { ...auth, 'content-range': `bytes 0-${chunk - 1}/${n}` },
          data.subarray(0, chunk),
        );
        const { id } = JSON.parse(created.body.toString());
        for (let a = chunk; a < n - chunk; a += chunk) {
          const r = await send(
            'PUT',
            contentsUrl(owner, id),
            { ...auth, 'content-range': `bytes ${a}-${a + chunk - 1}/${n}` },
            data.subarray(a, a + chunk),
          );
          expect(r.status).toBe(200);
        }
        // part 1 is covered and assembled (after the answer of the chunk that covered it): only the
        // piece that part 2 needs is left
        const deadline = Date.now() + 15_000;
        while (Date.now() < deadline && (await staged(id)).length > 1) await new Promise((r) => setTimeout(r, 100));
        expect(await staged(id)).toEqual([`${21 * chunk}-${22 * chunk - 1}`]);
        const last = await send(
          'PUT',
          contentsUrl(owner, id),
          { ...auth, 'content-range': `bytes ${n - chunk}-${n - 1}/${n}` },
          data.subarray(n - chunk),
        );
        expect(last.status).toBe(201);
        expect(await staged(id)).toEqual([]);
        const back = await send('GET', contentsUrl(owner, id), auth);
        expect(sha256(back.body)).toBe(sha256(data));
        // 23 pieces staged, 2 parts assembled, 1 content completed (other tests may add to them meanwhile)
        expect((await metric('content_pieces_staged_total')) - before.staged).toBeGreaterThanOrEqual(23);
        expect(
          (await metric('content_parts_stored_total', 'via="assembled"')) - before.assembled,
        ).toBeGreaterThanOrEqual(2);
        expect((await metric('content_uploads_completed_total')) - before.completed).toBeGreaterThanOrEqual(1);
      } finally {
        s3.destroy();
      }
    });

    it('accepts a part re-sent after the first attempt was cut off', async () => {
      const n = 3 * MiB;
      const data = randomBytes(n);
      const created = await send(
        'POST',
        contentsUrl(owner),
        { ...auth, 'content-range': `bytes 0-${MiB - 1}/${n}` },
        data.subarray(0, MiB),
      );
      const { id } = JSON.parse(created.body.toString());
      // a body cut short (the connection drops mid-part) is refused and leaves nothing
      const cut = await send(
        'PUT',
        contentsUrl(owner, id),
        { ...auth, 'content-range': `bytes ${MiB}-${2 * MiB - 1}/${n}` },
        data.subarray(MiB, MiB + 1000),
        {
          chunked: true,
        },
      );
      expect(cut.status).toBe(400);
      const status = await send('HEAD', contentsUrl(owner, id), auth);
      expect(status.headers['x-received-ranges']).toBe(`0-${MiB - 1}`);
      for (const a of [MiB, MiB, 2 * MiB]) {
        const r = await send(
          'PUT',
          contentsUrl(owner, id),
          { ...auth, 'content-range': `bytes ${a}-${a + MiB - 1}/${n}` },
          data.subarray(a, a + MiB),
        );
        expect([200, 201]).toContain(r.status);
      }
      const back = await send('GET', contentsUrl(owner, id), auth);
      expect(sha256(back.body)).toBe(sha256(data));
      // the content is ready: the same bytes again are a harmless retry
      const again = await send(
        'PUT',
        contentsUrl(owner, id),
        { ...auth, 'content-range': `bytes ${MiB}-${2 * MiB - 1}/${n}` },
        data.subarray(MiB, 2 * MiB),
      );
      expect(again.status).toBe(200);
    });
  });
});
