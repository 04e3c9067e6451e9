import { randomBytes, randomUUID } from 'node:crypto';
import { tokenFor } from './support/stack';
import { download, newOwner, P, postPart, putPart, rangeOf, sha256 } from './support/http';

describe('contents through the gateway', () => {
  const owner = newOwner();
  let token: string;
  beforeAll(async () => {
    token = await tokenFor([owner]);
  });

  describe('a 150 MiB content sent as parts 3, 1, 2', () => {
    const total = 150 * 1024 * 1024;
    const data = randomBytes(total);
    let id: string;

    beforeAll(async () => {
      const third = await postPart(owner, token, data.subarray(2 * P), rangeOf(2 * P, total, total));
      expect(third.status).toBe(201);
      expect(third.headers.get('content-type')).toBe('application/json; charset=utf-8');
      expect(Object.keys(third.json())).toEqual(['id']);
      id = third.json().id;

      const first = await putPart(owner, id, token, data.subarray(0, P), rangeOf(0, P, total));
      expect(first.status).toBe(200);
      expect(first.json()).toEqual({ id, content: { id }, 'is-completed': false });

      const second = await putPart(owner, id, token, data.subarray(P, 2 * P), rangeOf(P, 2 * P, total));
      expect(second.status).toBe(201);
      expect(second.json()).toEqual({ id, content: { id }, 'is-completed': true });
    });

    it('downloads whole with the same SHA-256 and the download headers', async () => {
      const whole = await download(owner, id, token);
      expect(whole.status).toBe(200);
      expect(whole.body.length).toBe(total);
      expect(sha256(whole.body)).toBe(sha256(data));
      expect(whole.headers.get('content-length')).toBe(String(total));
      expect(whole.headers.get('content-type')).toBe('application/octet-stream');
      expect(whole.headers.get('accept-ranges')).toBe('bytes');
      expect(whole.headers.get('etag')).toBeTruthy();
    });

    it('serves RFC ranges across part boundaries with 206', async () => {
      for (const [a, b] of [
        [P - 5, P + 5],
        [P - 1, 2 * P],
        [0, total - 1],
        [2 * P - 100, 2 * P + 100],
      ] as const) {
        const r = await download(owner, id, token, `bytes=${a}-${b}`);
        expect(r.status).toBe(206);
        expect(r.headers.get('content-range')).toBe(`bytes ${a}-${b}/${total}`);
        expect(r.body.equals(data.subarray(a, b + 1))).toBe(true);
      }
    });

    it('serves the legacy form "bytes a-b/total" with 200 and Content-Range', async () => {
      const r = await download(owner, id, token, `bytes ${P - 10}-${P + 9}/${total}`);
      expect(r.status).toBe(200);
      expect(r.headers.get('content-range')).toBe(`bytes ${P - 10}-${P + 9}/${total}`);
      expect(r.body.equals(data.subarray(P - 10, P + 10))).toBe(true);
    });

    it('serves open, suffix and clipped ranges, and 416 past the end', async () => {
      const open = await download(owner, id, token, `bytes=${total - 7}-`);
      expect(open.status).toBe(206);
      expect(open.body.equals(data.subarray(total - 7))).toBe(true);

      const suffix = await download(owner, id, token, 'bytes=-100');
      expect(suffix.status).toBe(206);
      expect(suffix.headers.get('content-range')).toBe(`bytes ${total - 100}-${total - 1}/${total}`);
      expect(suffix.body.equals(data.subarray(total - 100))).toBe(true);

      const clipped = await download(owner, id, token, `bytes=${total - 3}-${total + 1000}`);
      expect(clipped.status).toBe(206);
      expect(clipped.headers.get('content-range')).toBe(`bytes ${total - 3}-${total - 1}/${total}`);
      expect(clipped.headers.get('content-length')).toBe('3');

      const past = await download(owner, id, token, `bytes=${total}-`);
      expect(past.status).toBe(416);
      expect(past.headers.get('content-range')).toBe(`bytes */${total}`);
      expect(past.json()).toMatchObject({ id: 'urn:error:contents:rangeNotSatisfiable', 'status-code': 416 });
    });
  });

  it('stores a small content sent in one request, with its Content-Type', async () => {
    const data = randomBytes(1000);
    const created = await postPart(owner, token, data, null, 'text/csv');
    expect(created.status).toBe(201);
    const { id } = created.json();
    const got = await download(owner, id, token);
    expect(got.status).toBe(200);
    expect(got.headers.get('content-type')).toBe('text/csv');
    expect(got.body.equals(data)).toBe(true);
    expect(got.headers.get('content-range')).toBeNull();
  });

  it('stores a small content sent in one request with Content-Range bytes 0-(n-1)/n', async () => {
    const data = randomBytes(4096);
    const created = await postPart(owner, token, data, rangeOf(0, data.length, data.length));
    expect(created.status).toBe(201);
    const got = await download(owner, created.json().id, token, 'bytes=0-1048575');
    expect(got.status).toBe(206);
    expect(got.headers.get('content-range')).toBe(`bytes 0-4095/4096`);
    expect(got.body.equals(data)).toBe(true);
  });

  it('stores an empty content, serves it whole, and answers any Range of it with 416 bytes */0', async () => {
    const created = await postPart(owner, token, new Uint8Array(0), null);
    expect(created.status).toBe(201);
    const got = await download(owner, created.json().id, token);
    expect(got.status).toBe(200);
    expect(got.headers.get('content-length')).toBe('0');
    for (const range of ['bytes=0-1048575', 'bytes=0-', 'bytes=-5', 'bytes 0-0/0']) {
      const ranged = await download(owner, created.json().id, token, range);
      expect(ranged.status).toBe(416);
      expect(ranged.headers.get('content-range')).toBe('bytes */0');
      expect(ranged.json().id).toBe('urn:error:contents:rangeNotSatisfiable');
    }
  });

  // 50 rounds of two 64 MiB parts (6.4 GB through the gateway): 300 s did not suffice beside three
  // other test files and a background Go build on two cores; the time is printed.
  it('answers exactly one 201 when the last two parts race, 50 times over', async () => {
    const started = performance.now();
    // A 503 (Retry-After) is an answer the service may give to either racer (its claim on a part
    // lost when Redis was slow to answer, say): the client sends the part again, as the spec asks,
    // and what is checked is the outcome of both after that.
    let retried = 0;
    const putPartRetrying = async (...args: Parameters<typeof putPart>) => {
      for (let attempt = 1; ; attempt++) {
        const answer = await putPart(...args);
        if (answer.status !== 503 || attempt === 3) return answer;
        retried++;
        await new Promise((r) => setTimeout(r, 1000 * Number(answer.headers.get('retry-after') ?? 1)));
      }
    };
    const total = 2 * P + 10;
    const part1 = randomBytes(P);
    const part2 = randomBytes(P);
    const tail = randomBytes(10);
    const expected = sha256(Buffer.concat([part1, part2, tail]));
    for (let round = 0; round < 50; round++) {
      const created = await postPart(owner, token, tail, rangeOf(2 * P, total, total));
      expect(created.status).toBe(201);
      const id = created.json().id;
      const answers = await Promise.all([
        putPartRetrying(owner, id, token, part1, rangeOf(0, P, total)),
        putPartRetrying(owner, id, token, part2, rangeOf(P, 2 * P, total)),
      ]);
      const statuses = answers.map((a) => a.status).sort();
      expect(statuses).toEqual([200, 201]);
      expect(answers.filter((a) => a.json()['is-completed'] === true).length).toBeGreaterThanOrEqual(1);
      if (round % 10 === 0 || round === 49) {
        const got = await download(owner, id, token);
        expect(got.status).toBe(200);
        expect(sha256(got.body)).toBe(expected);
      } else {
        const probe = await download(owner, id, token, `bytes=${P - 1}-${P}`);
        expect(probe.status).toBe(206);
        expect(probe.body.equals(Buffer.from([part1[P - 1]!, part2[0]!]))).toBe(true);
      }
    }
    console.log(
      `50 races of the last two parts: ${((performance.now() - started) / 1000).toFixed(1)} s; ${retried} answer(s) of 503 sent again`,
    );
  }, 900_000);

  it("never lets one owner read or learn of another owner's content", async () => {
    const other = newOwner();
    const otherToken = await tokenFor([other]);
    const created = await postPart(owner, token, randomBytes(100), null);
    const id = created.json().id;
    // other owner's token on this owner's path: no access to the owner at all
    const forbidden = await download(owner, id, otherToken);
    expect(forbidden.status).toBe(403);
    expect(forbidden.json()).toMatchObject({ id: 'urn:error:contents:ownerForbidden', 'status-code': 403 });
    // other owner's own path with this content's id: behaves as unknown
    const hidden = await download(other, id, otherToken);
    expect(hidden.status).toBe(404);
    expect(hidden.body.toString()).not.toContain(owner);
    const unknown = await download(other, randomUUID(), otherToken);
    expect(unknown.status).toBe(404);
    expect(hidden.json().message.replace(id, '')).toBe(
      unknown.json().message.replace(/[0-9a-f-]{36}(?=.*of owner)/, ''),
    );
    const write = await putPart(other, id, otherToken, randomBytes(100), 'bytes 0-99/100');
    expect(write.status).toBe(404);
  });
});
