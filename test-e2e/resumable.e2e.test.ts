// The IETF resumable upload door (draft-ietf-httpbis-resumable-upload) through the real gateway
// and content-service: tus-js-client's `ietf-draft-05` protocol (interop version 6) as the client
// where it can be (uploads in chunks, the whole body at creation, pause and resume, a deferred
// length, cancellation), the current draft's interop version 8 by hand (creation with and without
// Upload-Complete, an empty completing append, 409 with the offset, a cut append), and the
// refusals. An upload here is a /v1 content: the bytes, type and digest are read back through /v1.
import { randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { Upload, type UploadOptions } from 'tus-js-client';
import { testStack, tokenFor } from './support/stack';
import { call, contentsUrl, newOwner, P, sha256 } from './support/http';

const MiB = 1024 * 1024;
const V6 = { 'upload-draft-interop-version': '6' };
const V8 = { 'upload-draft-interop-version': '8' };

const doorUrl = (owner: string, id?: string) => `${testStack().gatewayUrl}/v1/${owner}/resumable${id ? `/${id}` : ''}`;
const idOf = (url: string) => url.split('/').pop()!;

/** Runs a tus-js-client upload in its `ietf-draft-05` protocol to its end; its URL and the requests it sent. */
function upload(
  data: Buffer | Readable,
  options: UploadOptions,
): Promise<{ url: string; sent: { method: string; offset: string | undefined; complete: string | undefined }[] }> {
  const sent: { method: string; offset: string | undefined; complete: string | undefined }[] = [];
  return new Promise((resolve, reject) => {
    const u = new Upload(data, {
      protocol: 'ietf-draft-05',
      retryDelays: [],
      ...options,
      onBeforeRequest: (req) => {
        sent.push({
          method: req.getMethod(),
          offset: req.getHeader('Upload-Offset'),
          complete: req.getHeader('Upload-Complete'),
        });
      },
      onError: reject,
      onSuccess: () => resolve({ url: u.url!, sent }),
    });
    u.start();
  });
}

describe('the IETF resumable upload door', () => {
  const owner = newOwner();
  let token: string;
  let auth: Record<string, string>;

  beforeAll(async () => {
    token = await tokenFor([owner]);
    auth = { authorization: `Bearer ${token}` };
  });

  const readBack = async (id: string) => {
    const got = await call(contentsUrl(owner, id), { token });
    expect(got.status).toBe(200);
    return got;
  };

  it('answers OPTIONS with Accept-Patch and its limits, without credentials', async () => {
    for (const url of [doorUrl(owner), doorUrl(owner, '5dcd7f18-797f-482c-b9c9-eed6d80246fd')]) {
      const got = await call(url, { method: 'OPTIONS', headers: V6 });
      expect(got.status).toBe(204);
      expect(got.headers.get('accept-patch')).toBe('application/partial-upload');
      expect(got.headers.get('upload-limit')).toBe(`max-size=${30 * 1024 ** 3}, min-append-size=${P}`);
      expect(got.headers.get('upload-draft-interop-version')).toBe('6');
    }
  });

  it('takes an upload from tus-js-client (ietf-draft-05) in 4 MiB appends: the same bytes, type and digest through /v1', async () => {
    const data = randomBytes(10 * MiB + 3);
    const t0 = Date.now();
    const { url, sent } = await upload(data, {
      endpoint: doorUrl(owner),
      headers: auth,
      chunkSize: 4 * MiB,
    });
    console.log(`10 MiB in 4 MiB appends (interop 6): ${sent.length} requests in ${Date.now() - t0} ms`);
    expect(sent).toEqual([
      { method: 'POST', offset: undefined, complete: '?0' },
      { method: 'PATCH', offset: '0', complete: '?0' },
      { method: 'PATCH', offset: String(4 * MiB), complete: '?0' },
      { method: 'PATCH', offset: String(8 * MiB), complete: '?1' },
    ]);
    expect(url).toMatch(new RegExp(`/v1/${owner}/resumable/[0-9a-f-]{36}$`));
    const got = await readBack(idOf(url));
    expect(sha256(got.body)).toBe(sha256(data));
    expect(got.headers.get('repr-digest')).toMatch(/sha-256=:|crc64nvme=:/);
    const head = await call(url, { method: 'HEAD', headers: { ...V6, ...auth } });
    expect(head.status).toBe(204);
    expect(head.headers.get('upload-offset')).toBe(String(data.length));
    expect(head.headers.get('upload-complete')).toBe('?1');
    expect(head.headers.get('upload-length')).toBe(String(data.length));
    expect(head.headers.get('content-location')).toBe(`/v1/${owner}/contents/${idOf(url)}`);
    expect(head.headers.get('repr-digest')).toBe(got.headers.get('repr-digest'));
    expect(head.headers.get('cache-control')).toBe('no-store');
  });

  it('takes a whole file in the creation request, one body across a 64 MiB part boundary', async () => {
    const data = randomBytes(P + 5 * MiB);
    const t0 = Date.now();
    const { url, sent } = await upload(data, {
      endpoint: doorUrl(owner),
      headers: auth,
      uploadDataDuringCreation: true,
    });
    console.log(`${data.length} bytes in the creation alone (interop 6): ${Date.now() - t0} ms`);
    expect(sent.map((s) => `${s.method} ${s.complete}`)).toEqual(['POST ?1']);
    const got = await readBack(idOf(url));
    expect(sha256(got.body)).toBe(sha256(data));
  });

  it('pauses and resumes: a new client on the same URL goes on from the offset stored', async () => {
    const data = randomBytes(3 * MiB);
    const url = await new Promise<string>((resolve, reject) => {
      const u: Upload = new Upload(data, {
        protocol: 'ietf-draft-05',
        endpoint: doorUrl(owner),
        headers: auth,
        chunkSize: MiB,
        retryDelays: [],
        onError: reject,
        onChunkComplete: () => {
          void u.abort().then(() => resolve(u.url!), reject);
        },
      });
      u.start();
    });
    const paused = await call(url, { method: 'HEAD', headers: { ...V6, ...auth } });
    expect(paused.headers.get('upload-offset')).toBe(String(MiB));
    expect(paused.headers.get('upload-complete')).toBe('?0');
    expect(paused.headers.get('upload-limit')).toMatch(/, expires=\d+$/); // draft -05's name for max-age
    const { sent } = await upload(data, { uploadUrl: url, headers: auth, chunkSize: MiB });
    expect(sent.map((s) => `${s.method} ${s.offset ?? ''}`)).toEqual(['HEAD ', `PATCH ${MiB}`, `PATCH ${2 * MiB}`]);
    expect(sha256((await readBack(idOf(url))).body)).toBe(sha256(data));
  });

  it('takes a stream of unknown length: the last append names it with Upload-Complete: ?1', async () => {
    const data = randomBytes(66 * MiB);
    const { url, sent } = await upload(Readable.from([data.subarray(0, 40 * MiB), data.subarray(40 * MiB)]), {
      endpoint: doorUrl(owner),
      headers: auth,
      chunkSize: P,
      uploadLengthDeferred: true,
    });
    expect(sent.map((s) => `${s.method} ${s.offset ?? ''} ${s.complete}`)).toEqual([
      'POST  ?0',
      'PATCH 0 ?0',
      `PATCH ${40 * MiB} ?1`, // the client cuts at the stream's chunks, and knows the last one
    ]);
    expect(sha256((await readBack(idOf(url))).body)).toBe(sha256(data));
  });

  it('cancels an upload with DELETE: gone from both doors', async () => {
    const created = await call(doorUrl(owner), {
      method: 'POST',
      headers: { ...V8, ...auth, 'upload-complete': '?0', 'upload-length': '100' },
    });
    expect(created.status).toBe(201);
    const url = new URL(created.headers.get('location')!, testStack().gatewayUrl).toString();
    expect((await call(url, { method: 'DELETE', headers: { ...V8, ...auth } })).status).toBe(204);
    expect((await call(url, { method: 'HEAD', headers: { ...V8, ...auth } })).status).toBe(404);
    expect((await call(contentsUrl(owner, idOf(url)), { token })).status).toBe(404);
  });

  it('speaks the current draft (interop 8) by hand: creation with a first body, 409 with the offset, an empty completing append', async () => {
    const data = randomBytes(3000);
    const created = await call(doorUrl(owner), {
      method: 'POST',
      body: data.subarray(0, 1000),
      headers: { ...V8, ...auth, 'upload-complete': '?0', 'content-type': 'image/png' },
    });
    expect(created.status).toBe(201);
    expect(created.headers.get('upload-offset')).toBe('1000');
    expect(created.headers.get('upload-complete')).toBe('?0');
    expect(created.headers.get('upload-limit')).toMatch(/^max-size=\d+, min-append-size=\d+, max-age=\d+$/);
    expect(created.headers.get('upload-draft-interop-version')).toBe('8');
    const url = new URL(created.headers.get('location')!, testStack().gatewayUrl).toString();
    const append = (offset: number, body: Buffer, complete: '?0' | '?1', extra: Record<string, string> = {}) =>
      call(url, {
        method: 'PATCH',
        body,
        headers: {
          ...V8,
          ...auth,
          'content-type': 'application/partial-upload',
          'upload-offset': String(offset),
          'upload-complete': complete,
          ...extra,
        },
      });
    const wrong = await append(500, data.subarray(500, 2000), '?0');
    expect(wrong.status).toBe(409);
    expect(wrong.json().id).toBe('urn:error:contents:uploadOffsetMismatch');
    expect(wrong.headers.get('upload-offset')).toBe('1000');
    const more = await append(1000, data.subarray(1000), '?0');
    expect(more.status).toBe(204);
    expect(more.headers.get('upload-offset')).toBe('3000');
    expect(more.headers.get('upload-complete')).toBe('?0');
    expect((await call(contentsUrl(owner, idOf(url)), { token })).status).toBe(409); // not ready: no length yet
    const done = await append(3000, Buffer.alloc(0), '?1');
    expect(done.status).toBe(200);
    expect(done.headers.get('upload-complete')).toBe('?1');
    expect(done.headers.get('content-location')).toBe(`/v1/${owner}/contents/${idOf(url)}`);
    const got = await readBack(idOf(url));
    expect(sha256(got.body)).toBe(sha256(data));
    expect(got.headers.get('content-type')).toBe('image/png');
    expect(done.headers.get('repr-digest')).toBe(got.headers.get('repr-digest'));
    // Completed: the same empty completing append answers the same; bytes past the end do not go in.
    expect((await append(3000, Buffer.alloc(0), '?1')).status).toBe(200);
    // Bytes appended to a completed upload are an inconsistent length (the draft's words): 409 totalConflict.
    const past = await append(3000, randomBytes(10), '?1');
    expect([past.status, past.json().id]).toEqual([409, 'urn:error:contents:totalConflict']);
    expect(sha256((await readBack(idOf(url))).body)).toBe(sha256(data));
  });

  it('stores a whole content sent in one creation with Upload-Complete: ?1, and an empty one', async () => {
    const data = randomBytes(5000);
    const whole = await call(doorUrl(owner), {
      method: 'POST',
      body: data,
      headers: { ...V8, ...auth, 'upload-complete': '?1', 'upload-length': '5000' },
    });
    expect(whole.status).toBe(201);
    expect(whole.headers.get('upload-complete')).toBe('?1');
    expect(sha256((await readBack(idOf(whole.headers.get('location')!))).body)).toBe(sha256(data));
    const empty = await call(doorUrl(owner), { method: 'POST', headers: { ...V8, ...auth, 'upload-complete': '?1' } });
    expect(empty.status).toBe(201);
    expect(empty.headers.get('upload-complete')).toBe('?1');
    expect((await readBack(idOf(empty.headers.get('location')!))).body.length).toBe(0);
  });

  it('keeps each 64 MiB part an append finished before its connection was cut, and says so', async () => {
    const data = randomBytes(P + 8 * MiB);
    const created = await call(doorUrl(owner), {
      method: 'POST',
      headers: { ...V8, ...auth, 'upload-complete': '?0', 'upload-length': String(data.length) },
    });
    const path = new URL(created.headers.get('location')!, testStack().gatewayUrl).pathname;
    const gateway = new URL(testStack().gatewayUrl);
    const sentBytes = P + 2 * MiB;
    await new Promise<void>((resolve, reject) => {
      const socket = connect(Number(gateway.port), gateway.hostname, () => {
        socket.write(
          `PATCH ${path} HTTP/1.1\r\nHost: ${gateway.host}\r\nAuthorization: Bearer ${token}\r\n` +
            `Upload-Draft-Interop-Version: 8\r\nUpload-Complete: ?1\r\nUpload-Offset: 0\r\n` +
            `Content-Type: application/partial-upload\r\nContent-Length: ${data.length}\r\n\r\n`,
        );
        socket.write(data.subarray(0, sentBytes), () => {
          setTimeout(() => {
            socket.destroy();
            resolve();
          }, 1_000);
        });
      });
      socket.on('error', reject);
    });
    const t0 = Date.now();
    let offset = '0';
    while (Date.now() - t0 < 15_000) {
      const head = await call(`${testStack().gatewayUrl}${path}`, { method: 'HEAD', headers: { ...V8, ...auth } });
      offset = head.headers.get('upload-offset') ?? '';
      if (offset === String(P)) break;
      await sleep(200);
    }
    console.log(`the cut append's first part was stored, HEAD said so ${Date.now() - t0} ms after the cut`);
    expect(offset).toBe(String(P));
    const rest = await call(`${testStack().gatewayUrl}${path}`, {
      method: 'PATCH',
      body: data.subarray(P),
      headers: {
        ...V8,
        ...auth,
        'content-type': 'application/partial-upload',
        'upload-offset': String(P),
        'upload-complete': '?1',
      },
    });
    expect(rest.status).toBe(200);
    expect(sha256((await readBack(idOf(path))).body)).toBe(sha256(data));
  });

  it('refuses what the draft does not allow, in the /v1 error format, and changes nothing', async () => {
    const create = (headers: Record<string, string>, body?: Buffer) =>
      call(doorUrl(owner), { method: 'POST', body, headers: { ...auth, ...headers } });
    const refused = async (answer: Promise<Awaited<ReturnType<typeof call>>>, status: number, code: string) => {
      const got = await answer;
      expect([got.status, got.json().id]).toEqual([status, `urn:error:contents:${code}`]);
    };
    await refused(create({ ...V8 }), 400, 'invalidUploadComplete');
    await refused(create({ ...V8, 'upload-complete': 'true' }), 400, 'invalidUploadComplete');
    await refused(
      create({ 'upload-draft-interop-version': '5', 'upload-complete': '?0' }),
      400,
      'interopVersionUnsupported',
    );
    await refused(create({ ...V8, 'upload-complete': '?0', 'upload-length': '-1' }), 400, 'invalidUploadLength');
    await refused(
      create({ ...V8, 'upload-complete': '?1', 'upload-length': '10' }, randomBytes(5)),
      409,
      'totalConflict',
    );
    await refused(
      create({ ...V8, 'upload-complete': '?0', 'upload-length': String(30 * 1024 ** 3 + 1) }),
      413,
      'contentTooLarge',
    );
    const created = await create({ ...V8, 'upload-complete': '?0', 'upload-length': '20' });
    const url = new URL(created.headers.get('location')!, testStack().gatewayUrl).toString();
    const patch = (headers: Record<string, string>, body = randomBytes(10)) =>
      call(url, {
        method: 'PATCH',
        body,
        headers: {
          ...V8,
          ...auth,
          'upload-offset': '0',
          'upload-complete': '?0',
          'content-type': 'application/partial-upload',
          ...headers,
        },
      });
    await refused(patch({ 'content-type': 'application/offset+octet-stream' }), 415, 'invalidPatchType');
    await refused(patch({ 'upload-complete': '?' }), 400, 'invalidUploadComplete');
    await refused(patch({ 'upload-offset': 'zero' }), 400, 'invalidUploadOffset');
    await refused(patch({ 'upload-complete': '?1' }), 409, 'totalConflict'); // ends at 10, not the 20 named
    await refused(patch({}, randomBytes(30)), 400, 'rangePastTotal');
    const other = await tokenFor([newOwner()]);
    expect((await call(url, { method: 'HEAD', headers: { ...V8, authorization: `Bearer ${other}` } })).status).toBe(
      403,
    );
    const head = await call(url, { method: 'HEAD', headers: { ...V8, ...auth } });
    expect([head.headers.get('upload-offset'), head.headers.get('upload-length')]).toEqual(['0', '20']);
  });
});
