// The tus 1.0 door through the real gateway and content-service, driven by tus-js-client (the
// reference tus client) where it can be: uploads in chunks and in one PATCH past a part boundary,
// pause and resume, a PATCH cut mid-body, termination; then the protocol's refusals by hand. A tus
// upload is a /v1 content: the bytes, type and digest are read back through /v1.
import { createHash, randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { Upload, type UploadOptions } from 'tus-js-client';
import { testStack, tokenFor } from './support/stack';
import { call, contentsUrl, newOwner, P, sha256 } from './support/http';

const MiB = 1024 * 1024;
const TUS = { 'tus-resumable': '1.0.0' };

const tusUrl = (owner: string, id?: string) => `${testStack().gatewayUrl}/v1/${owner}/tus${id ? `/${id}` : ''}`;
const idOf = (url: string) => url.split('/').pop()!;

/** Runs a tus-js-client upload to its end; its URL and the Upload-Offset of each PATCH it sent. */
function upload(
  data: Buffer | Readable,
  options: UploadOptions & { onStarted?: (u: Upload) => void },
): Promise<{ url: string; patchOffsets: number[] }> {
  const patchOffsets: number[] = [];
  return new Promise((resolve, reject) => {
    const u = new Upload(data, {
      retryDelays: [],
      ...options,
      onBeforeRequest: (req) => {
        if (req.getMethod() === 'PATCH') patchOffsets.push(Number(req.getHeader('Upload-Offset')));
        return options.onBeforeRequest?.(req);
      },
      onError: reject,
      onSuccess: () => resolve({ url: u.url!, patchOffsets }),
    });
    u.start();
    options.onStarted?.(u);
  });
}

describe('the tus 1.0 door', () => {
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

  it('takes an upload from tus-js-client in 4 MiB chunks: the same content, type and digest through /v1', async () => {
    const data = randomBytes(10 * MiB + 3);
    const t0 = Date.now();
    const { url, patchOffsets } = await upload(data, {
      endpoint: tusUrl(owner),
      headers: auth,
      chunkSize: 4 * MiB,
      metadata: { filename: 'report.txt', filetype: 'text/plain' },
    });
    console.log(`10 MiB in 4 MiB chunks: ${patchOffsets.length} PATCHes in ${Date.now() - t0} ms`);
    expect(patchOffsets).toEqual([0, 4 * MiB, 8 * MiB]);
    expect(url).toMatch(new RegExp(`/v1/${owner}/tus/[0-9a-f-]{36}$`));
    const got = await readBack(idOf(url));
    expect(sha256(got.body)).toBe(sha256(data));
    expect(got.headers.get('content-type')).toBe('text/plain');
    expect(got.headers.get('repr-digest')).toMatch(/sha-256=:|crc64nvme=:/);
    const head = await call(url, { method: 'HEAD', headers: { ...TUS, ...auth } });
    expect(head.status).toBe(200);
    expect(head.headers.get('upload-offset')).toBe(String(data.length));
    expect(head.headers.get('upload-length')).toBe(String(data.length));
    expect(head.headers.get('upload-metadata')).toBe(
      `filename ${Buffer.from('report.txt').toString('base64')},filetype ${Buffer.from('text/plain').toString('base64')}`,
    );
    expect(head.headers.get('tus-resumable')).toBe('1.0.0');
  });

  it('takes a whole file in the creation request (creation-with-upload), one body across a 64 MiB part boundary', async () => {
    const data = randomBytes(P + 5 * MiB);
    const t0 = Date.now();
    const { url, patchOffsets } = await upload(data, {
      endpoint: tusUrl(owner),
      headers: auth,
      uploadDataDuringCreation: true,
    });
    console.log(`${data.length} bytes in the POST alone: ${Date.now() - t0} ms`);
    expect(patchOffsets).toEqual([]);
    const got = await readBack(idOf(url));
    expect(got.body.length).toBe(data.length);
    expect(sha256(got.body)).toBe(sha256(data));
  });

  it('pauses and resumes: a new client on the same URL goes on from the offset stored', async () => {
    const data = randomBytes(3 * MiB);
    const url = await new Promise<string>((resolve, reject) => {
      const u: Upload = new Upload(data, {
        endpoint: tusUrl(owner),
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
    const paused = await call(url, { method: 'HEAD', headers: { ...TUS, ...auth } });
    expect(paused.headers.get('upload-offset')).toBe(String(MiB));
    expect(paused.headers.get('upload-expires')).toMatch(/GMT$/);
    const { patchOffsets } = await upload(data, { uploadUrl: url, headers: auth, chunkSize: MiB });
    expect(patchOffsets).toEqual([MiB, 2 * MiB]);
    expect(sha256((await readBack(idOf(url))).body)).toBe(sha256(data));
  });

  it('keeps each 64 MiB part a PATCH finished before its connection was cut, and says so; tus-js-client sends only the rest', async () => {
    const data = randomBytes(P + 8 * MiB);
    const created = await call(tusUrl(owner), {
      method: 'POST',
      headers: { ...TUS, ...auth, 'upload-length': String(data.length) },
    });
    expect(created.status).toBe(201);
    const url = new URL(created.headers.get('location')!, testStack().gatewayUrl).toString();
    // One PATCH of the whole file over a socket of its own, cut once the first part is stored.
    const { hostname, port, pathname } = new URL(url);
    const socket = connect(Number(port), hostname);
    socket.on('error', () => undefined);
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write(
      [
        `PATCH ${pathname} HTTP/1.1`,
        `Host: ${hostname}:${port}`,
        `Authorization: Bearer ${token}`,
        'Tus-Resumable: 1.0.0',
        'Upload-Offset: 0',
        'Content-Type: application/offset+octet-stream',
        `Content-Length: ${data.length}`,
        '',
        '',
      ].join('\r\n'),
    );
    socket.write(data.subarray(0, P + 2 * MiB));
    const t0 = Date.now();
    let offset = '0';
    while (offset === '0' && Date.now() - t0 < 30_000) {
      await sleep(200);
      offset = (await call(url, { method: 'HEAD', headers: { ...TUS, ...auth } })).headers.get('upload-offset')!;
    }
    socket.destroy();
    console.log(`first part stored ${Date.now() - t0} ms after the bytes were sent; the connection cut then`);
    expect(offset).toBe(String(P));
    await sleep(500);
    const after = await call(url, { method: 'HEAD', headers: { ...TUS, ...auth } });
    expect(after.headers.get('upload-offset')).toBe(String(P));
    const { patchOffsets } = await upload(data, { uploadUrl: url, headers: auth });
    expect(patchOffsets).toEqual([P]);
    expect(sha256((await readBack(idOf(url))).body)).toBe(sha256(data));
  });

  it('terminates an upload (tus-js-client abort(true)): it is gone from tus and /v1', async () => {
    const data = randomBytes(2 * MiB);
    const url = await new Promise<string>((resolve, reject) => {
      const u: Upload = new Upload(data, {
        endpoint: tusUrl(owner),
        headers: auth,
        chunkSize: MiB,
        retryDelays: [],
        onError: reject,
        onChunkComplete: () => {
          const at = u.url!;
          void u.abort(true).then(() => resolve(at), reject);
        },
      });
      u.start();
    });
    expect((await call(url, { method: 'HEAD', headers: { ...TUS, ...auth } })).status).toBe(404);
    expect((await call(contentsUrl(owner, idOf(url)), { method: 'HEAD', token })).status).toBe(404);
  });

  it('takes uploads of a length known only at their end (creation-defer-length) from a stream', async () => {
    for (const [size, chunk] of [
      [3 * MiB + 5, MiB],
      // Ends on a chunk boundary past a part: the last PATCH names the length with no bytes, and
      // the final part, staged while the length was unknown, is assembled then.
      [P + 2 * MiB, 33 * MiB],
    ]) {
      const data = randomBytes(size);
      const named: number[] = [];
      const t0 = Date.now();
      // A stream, whose end the client learns only by reading past its last byte.
      const stream = Readable.from(
        (function* () {
          for (let at = 0; at < size; at += MiB) yield data.subarray(at, Math.min(size, at + MiB));
        })(),
      );
      const { url, patchOffsets } = await upload(stream, {
        endpoint: tusUrl(owner),
        headers: auth,
        chunkSize: chunk,
        uploadLengthDeferred: true,
        onAfterResponse: (req) => {
          if (req.getMethod() === 'PATCH' && req.getHeader('Upload-Length'))
            named.push(Number(req.getHeader('Upload-Length')));
        },
      });
      console.log(
        `${size} bytes of unknown length in ${chunk}-byte PATCHes: offsets ${patchOffsets.join(', ')} in ${Date.now() - t0} ms`,
      );
      expect(named).toEqual([size]);
      const got = await readBack(idOf(url));
      expect(got.body.length).toBe(size);
      expect(sha256(got.body)).toBe(sha256(data));
    }
  });

  it('takes a parallel upload (parallelUploads: 4, concatenation): the final upload is the file, the partials go', async () => {
    const data = randomBytes(P + 7 * MiB + 5);
    const partials: string[] = [];
    let [finalSent, finalAnswered] = [0, 0];
    const t0 = Date.now();
    const { url } = await upload(data, {
      endpoint: tusUrl(owner),
      headers: auth,
      parallelUploads: 4,
      metadata: { filename: 'parallel.bin', filetype: 'application/x-parallel' },
      onBeforeRequest: (req) => {
        if (req.getHeader('Upload-Concat')?.startsWith('final;')) finalSent = Date.now();
      },
      onAfterResponse: (req, res) => {
        if (req.getMethod() === 'POST' && req.getHeader('Upload-Concat') === 'partial')
          partials.push(res.getHeader('Location'));
        if (req.getHeader('Upload-Concat')?.startsWith('final;')) finalAnswered = Date.now();
      },
    });
    console.log(
      `${data.length} bytes in 4 partial uploads and a final one: ${Date.now() - t0} ms, the final creation (the copy) ${finalAnswered - finalSent} ms`,
    );
    expect(partials).toHaveLength(4);
    const got = await readBack(idOf(url));
    expect(sha256(got.body)).toBe(sha256(data));
    expect(got.headers.get('content-type')).toBe('application/x-parallel');
    const head = await call(url, { method: 'HEAD', headers: { ...TUS, ...auth } });
    expect(head.headers.get('upload-offset')).toBe(String(data.length));
    const named = head.headers.get('upload-concat')!;
    expect(named.startsWith('final;')).toBe(true);
    expect(named.slice(6).split(' ').sort()).toEqual(partials.map((p) => new URL(p, tusUrl(owner)).pathname).sort());
    // The partials' bytes are the final upload's now: they are gone.
    for (const p of partials) expect((await call(contentsUrl(owner, idOf(p)), { token })).status).toBe(404);
    // A final upload takes no PATCH (tus: 403).
    const patched = await call(url, {
      method: 'PATCH',
      body: randomBytes(1),
      headers: {
        ...TUS,
        ...auth,
        'upload-offset': String(data.length),
        'content-type': 'application/offset+octet-stream',
      },
    });
    expect([patched.status, patched.json().id]).toEqual([403, 'urn:error:contents:finalUploadNotPatchable']);
  });

  it("refuses a final upload of unfinished, non-partial or other owners' uploads, and changes nothing", async () => {
    const create = (headers: Record<string, string>) =>
      call(tusUrl(owner), { method: 'POST', headers: { ...TUS, ...auth, ...headers } });
    const partial = await create({ 'upload-length': '10', 'upload-concat': 'partial' });
    expect(partial.status).toBe(201);
    const whole = await create({ 'upload-length': '0' });
    const other = newOwner();
    const refused = async (concat: string) => {
      const got = await create({ 'upload-concat': concat });
      expect([concat, got.status, got.json().id]).toEqual([concat, 400, 'urn:error:contents:invalidUploadConcat']);
    };
    const p = partial.headers.get('location')!;
    await refused(`final;${p}`); // not finished
    await refused(`final;${whole.headers.get('location')!}`); // not a partial upload
    await refused(`final;${p.replace(owner, other)}`); // another owner's
    await refused(`final;${p} ${p}`);
    await refused('final;');
    await refused('whole');
    const head = await call(new URL(p, tusUrl(owner)).toString(), { method: 'HEAD', headers: { ...TUS, ...auth } });
    expect([head.status, head.headers.get('upload-offset'), head.headers.get('upload-concat')]).toEqual([
      200,
      '0',
      'partial',
    ]);
  });

  it('completes a deferred upload on a PATCH that names its length with no bytes, assembling its final part then', async () => {
    const data = randomBytes(P + 2 * MiB);
    const created = await call(tusUrl(owner), {
      method: 'POST',
      headers: { ...TUS, ...auth, 'upload-defer-length': '1' },
    });
    expect(created.status).toBe(201);
    const url = new URL(created.headers.get('location')!, testStack().gatewayUrl).toString();
    const patch = (offset: number, body: Buffer, extra: Record<string, string> = {}) =>
      call(url, {
        method: 'PATCH',
        body,
        headers: {
          ...TUS,
          ...auth,
          'upload-offset': String(offset),
          'content-type': 'application/offset+octet-stream',
          ...extra,
        },
      });
    const sent = await patch(0, data);
    expect(sent.status).toBe(204);
    expect(sent.headers.get('upload-offset')).toBe(String(data.length));
    const open = await call(url, { method: 'HEAD', headers: { ...TUS, ...auth } });
    expect(open.headers.get('upload-defer-length')).toBe('1');
    expect(open.headers.get('upload-length')).toBeNull();
    expect((await call(contentsUrl(owner, idOf(url)), { token })).status).toBe(409);
    const t0 = Date.now();
    const named = await patch(data.length, Buffer.alloc(0), { 'upload-length': String(data.length) });
    console.log(`the length named with no bytes: completed in ${Date.now() - t0} ms`);
    expect(named.status).toBe(204);
    expect(sha256((await readBack(idOf(url))).body)).toBe(sha256(data));
    const again = await patch(data.length, Buffer.alloc(0), { 'upload-length': String(data.length + 1) });
    expect(again.status).toBe(409);
  });

  it('stores an empty file at once', async () => {
    const { url } = await upload(Buffer.alloc(0), { endpoint: tusUrl(owner), headers: auth });
    const got = await readBack(idOf(url));
    expect(got.body.length).toBe(0);
  });

  describe('checksums (Upload-Checksum)', () => {
    const create = async (length: number) => {
      const created = await call(tusUrl(owner), {
        method: 'POST',
        headers: { ...TUS, ...auth, 'upload-length': String(length) },
      });
      expect(created.status).toBe(201);
      return new URL(created.headers.get('location')!, testStack().gatewayUrl).toString();
    };
    const patch = (url: string, offset: number, body: Buffer, checksum?: string) =>
      call(url, {
        method: 'PATCH',
        body,
        headers: {
          ...TUS,
          ...auth,
          'upload-offset': String(offset),
          'content-type': 'application/offset+octet-stream',
          ...(checksum ? { 'upload-checksum': checksum } : {}),
        },
      });
    const digest = (algorithm: string, data: Buffer) => createHash(algorithm).update(data).digest('base64');

    it('keeps a chunk whose digest matches, refuses one that does not with 460 and keeps nothing of it', async () => {
      const data = randomBytes(3 * MiB);
      const url = await create(data.length);
      const first = data.subarray(0, MiB);
      expect((await patch(url, 0, first, `sha1 ${digest('sha1', first)}`)).status).toBe(204);
      const second = data.subarray(MiB, 2 * MiB);
      const bad = await patch(url, MiB, second, `sha256 ${digest('sha256', first)}`);
      expect(bad.status).toBe(460);
      expect(bad.json().id).toBe('urn:error:contents:uploadChecksumMismatch');
      const head = await call(url, { method: 'HEAD', headers: { ...TUS, ...auth } });
      expect(head.headers.get('upload-offset')).toBe(String(MiB));
      expect((await patch(url, MiB, second, `md5 ${digest('md5', second)}`)).status).toBe(204);
      const rest = data.subarray(2 * MiB);
      expect((await patch(url, 2 * MiB, rest, `sha512 ${digest('sha512', rest)}`)).status).toBe(204);
      expect(sha256((await readBack(idOf(url))).body)).toBe(sha256(data));
    });

    it('refuses a small body with another digest (smaller than a stream buffer) and stays up', async () => {
      const url = await create(20);
      const bad = await patch(url, 0, randomBytes(10), `sha1 ${digest('sha1', randomBytes(10))}`);
      expect(bad.status).toBe(460);
      const withBody = await call(`${testStack().gatewayUrl}/v1/${owner}/tus`, {
        method: 'POST',
        body: randomBytes(5),
        headers: {
          ...TUS,
          ...auth,
          'upload-length': '20',
          'content-type': 'application/offset+octet-stream',
          'upload-checksum': `md5 ${digest('md5', randomBytes(5))}`,
        },
      });
      if (withBody.status !== 460)
        console.log(`creation with a bad checksum: ${withBody.status} ${withBody.body.toString()}`);
      expect(withBody.status).toBe(460);
      const head = await call(url, { method: 'HEAD', headers: { ...TUS, ...auth } });
      expect(head.status).toBe(200);
      expect(head.headers.get('upload-offset')).toBe('0');
    });

    it('refuses an algorithm it does not offer, and a checksummed PATCH across a part boundary', async () => {
      const url = await create(P + MiB);
      const body = randomBytes(MiB);
      const crc = await patch(url, 0, body, 'crc32 AAAAAA==');
      expect(crc.status).toBe(400);
      expect(crc.json().id).toBe('urn:error:contents:invalidUploadChecksum');
      const across = randomBytes(P + MiB);
      const spans = await patch(url, 0, across, `sha1 ${digest('sha1', across)}`);
      expect(spans.status).toBe(400);
      expect(spans.json().id).toBe('urn:error:contents:checksumSpansParts');
    });
  });

  describe('refusals', () => {
    let url: string;
    beforeAll(async () => {
      const created = await call(tusUrl(owner), {
        method: 'POST',
        headers: { ...TUS, ...auth, 'upload-length': '100', 'upload-metadata': 'filename YS50eHQ=' },
      });
      expect(created.status).toBe(201);
      expect(created.headers.get('upload-expires')).toMatch(/GMT$/);
      url = new URL(created.headers.get('location')!, testStack().gatewayUrl).toString();
    });
    const body = randomBytes(10);
    const patchHeaders = (extra: Record<string, string> = {}) => ({
      ...TUS,
      ...auth,
      'content-type': 'application/offset+octet-stream',
      'upload-offset': '0',
      ...extra,
    });
    const refused = async (
      answer: Promise<Awaited<ReturnType<typeof call>>>,
      status: number,
      code: string,
    ): Promise<void> => {
      const got = await answer;
      expect({ status: got.status, id: got.json().id }).toEqual({ status, id: `urn:error:contents:${code}` });
      expect(got.headers.get('tus-resumable')).toBe('1.0.0');
    };

    it('tells its capabilities to OPTIONS, without credentials', async () => {
      const got = await call(tusUrl(owner), { method: 'OPTIONS' });
      expect(got.status).toBe(204);
      expect(got.headers.get('tus-version')).toBe('1.0.0');
      expect(got.headers.get('tus-extension')!.split(',')).toEqual(
        expect.arrayContaining([
          'creation',
          'creation-with-upload',
          'termination',
          'expiration',
          'checksum',
          'concatenation',
        ]),
      );
      expect(got.headers.get('tus-max-size')).toBe('32212254720');
      expect(got.headers.get('tus-checksum-algorithm')).toContain('sha1');
    });

    it('refuses another tus version (412, naming its own), a wrong offset (409) and a body of another type (415)', async () => {
      const old = await call(url, { method: 'PATCH', body, headers: patchHeaders({ 'tus-resumable': '0.2.2' }) });
      expect(old.status).toBe(412);
      expect(old.headers.get('tus-version')).toBe('1.0.0');
      await refused(
        call(url, { method: 'PATCH', body, headers: patchHeaders({ 'upload-offset': '5' }) }),
        409,
        'uploadOffsetMismatch',
      );
      await refused(
        call(url, { method: 'PATCH', body, headers: patchHeaders({ 'content-type': 'application/octet-stream' }) }),
        415,
        'invalidPatchType',
      );
      await refused(
        call(url, { method: 'PATCH', body, headers: patchHeaders({ 'upload-offset': '-1' }) }),
        400,
        'invalidUploadOffset',
      );
      await refused(
        call(url, { method: 'PATCH', body: randomBytes(101), headers: patchHeaders() }),
        400,
        'rangePastTotal',
      );
      const head = await call(url, { method: 'HEAD', headers: { ...TUS, ...auth } });
      expect(head.headers.get('upload-offset')).toBe('0');
      expect(head.headers.get('upload-metadata')).toBe('filename YS50eHQ=');
    });

    it('refuses creations it cannot take: no length, a bad one, one past 30 GiB, a deferred one, bad metadata', async () => {
      const post = (headers: Record<string, string>) =>
        call(tusUrl(owner), { method: 'POST', headers: { ...TUS, ...auth, ...headers } });
      await refused(post({}), 400, 'invalidUploadLength');
      await refused(post({ 'upload-length': '12abc' }), 400, 'invalidUploadLength');
      await refused(post({ 'upload-length': String(30 * 1024 ** 3 + 1) }), 413, 'contentTooLarge');
      await refused(post({ 'upload-defer-length': '2' }), 400, 'invalidUploadLength');
      await refused(post({ 'upload-defer-length': '1', 'upload-length': '5' }), 400, 'invalidUploadLength');
      await refused(
        post({ 'upload-length': '5', 'upload-metadata': 'filename not*base64' }),
        400,
        'invalidUploadMetadata',
      );
      await refused(
        post({ 'upload-length': '5', 'upload-metadata': `a ${'QUFB'.repeat(300)}` }),
        400,
        'invalidUploadMetadata',
      );
    });

    it("keeps other owners and callers out: 401 without credentials, 403 for another owner's path, 404 for an unknown upload", async () => {
      const anonymous = await call(url, { method: 'HEAD', headers: TUS });
      expect(anonymous.status).toBe(401);
      expect(anonymous.headers.get('x-error-id')).toBe('urn:error:contents:missingCredentials');
      const stranger = await tokenFor([newOwner()]);
      const other = await call(url, {
        method: 'PATCH',
        body,
        headers: patchHeaders({ authorization: `Bearer ${stranger}` }),
      });
      expect(other.status).toBe(403);
      const unknown = await call(tusUrl(owner, '5dcd7f18-797f-482c-b9c9-eed6d80246fd'), {
        method: 'PATCH',
        body,
        headers: patchHeaders(),
      });
      expect(unknown.status).toBe(404);
    });
  });
});
