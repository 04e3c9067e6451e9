// Content-Digest (RFC 9530) on uploads: a body whose SHA-256 is not the one named is refused with
// 400 contentDigestMismatch before its last bytes reach S3, and nothing of it is kept; the right
// digest is accepted on every path a body takes (one PutObject, a staged piece, an aligned part).
// Repr-Digest names the whole content's digests: S3's CRC-64/NVME always, the SHA-256 where known.
import { createHash, randomBytes } from 'node:crypto';
import { Crc64Nvme } from '@aws-sdk/crc64-nvme';
import { tokenFor } from './support/stack';
import { call, contentsUrl, download, newOwner, P, sha256 } from './support/http';

const digestOf = (bytes: Uint8Array): string => `sha-256=:${createHash('sha256').update(bytes).digest('base64')}:`;
/** The CRC-64/NVME member of a digest field, computed here from the bytes. */
const crcOf = async (bytes: Uint8Array): Promise<string> => {
  const crc = new Crc64Nvme();
  crc.update(bytes);
  return `crc64nvme=:${Buffer.from(await crc.digest()).toString('base64')}:`;
};

describe('Content-Digest on uploads', () => {
  const owner = newOwner();
  let token: string;

  beforeAll(async () => {
    token = await tokenFor([owner]);
  });

  const send = (method: 'POST' | 'PUT', id: string | undefined, body: Uint8Array, headers: Record<string, string>) =>
    call(contentsUrl(owner, id), { method, body, headers, token });
  const received = async (id: string) => {
    const head = await call(contentsUrl(owner, id), { method: 'HEAD', token });
    return `${head.headers.get('x-upload-state')} ${head.headers.get('x-received-ranges')}`;
  };
  const expectCode = (answer: { status: number; json: () => { id: string } }, status: number, code: string) => {
    expect(`${answer.status} ${answer.json().id}`).toBe(`${status} urn:error:contents:${code}`);
  };

  it('refuses a one-request upload with the wrong digest and stores one with the right digest', async () => {
    const bytes = randomBytes(10_000);
    const wrong = await send('POST', undefined, bytes, { 'content-digest': digestOf(randomBytes(10)) });
    expectCode(wrong, 400, 'contentDigestMismatch');
    const right = await send('POST', undefined, bytes, { 'content-digest': digestOf(bytes) });
    expect(right.status).toBe(201);
    const back = await download(owner, right.json().id as string, token);
    expect(sha256(back.body)).toBe(sha256(bytes));
  });

  it('refuses a chunked one-request upload whose CRC-64/NVME is wrong, and stores one whose CRC is right', async () => {
    // Chunked: no Content-Length, so the service, not S3, is the one to see the whole body before it is stored.
    const sendChunked = (bytes: Uint8Array, digest: string) =>
      call(contentsUrl(owner), {
        method: 'POST',
        body: new ReadableStream({
          start(controller) {
            controller.enqueue(bytes);
            controller.close();
          },
        }),
        duplex: 'half',
        headers: { 'content-digest': digest },
        token,
      } as RequestInit & { token: string });
    const bytes = randomBytes(10_000);
    expectCode(await sendChunked(bytes, await crcOf(randomBytes(10))), 400, 'contentDigestMismatch');
    const right = await sendChunked(bytes, await crcOf(bytes));
    expect(right.status).toBe(201);
    const back = await download(owner, right.json().id as string, token);
    expect(sha256(back.body)).toBe(sha256(bytes));
  });

  it('leaves a staged range with the wrong digest unreceived; the right one completes the content', async () => {
    const bytes = randomBytes(300);
    const first = await send('POST', undefined, bytes.subarray(0, 100), {
      'content-range': 'bytes 0-99/300',
      'content-digest': digestOf(bytes.subarray(0, 100)),
    });
    expect(first.status).toBe(201);
    const id = first.json().id as string;
    const middle = { 'content-range': 'bytes 100-199/300' };
    const wrong = await send('PUT', id, bytes.subarray(100, 200), {
      ...middle,
      'content-digest': digestOf(bytes.subarray(0, 100)),
    });
    expectCode(wrong, 400, 'contentDigestMismatch');
    expect(await received(id)).toBe('uploading 0-99');
    const right = await send('PUT', id, bytes.subarray(100, 200), {
      ...middle,
      'content-digest': digestOf(bytes.subarray(100, 200)),
    });
    expect(right.status).toBe(200);
    const last = await send('PUT', id, bytes.subarray(200), {
      'content-range': 'bytes 200-299/300',
      'content-digest': digestOf(bytes.subarray(200)),
    });
    expect(last.status).toBe(201);
    expect(sha256((await download(owner, id, token)).body)).toBe(sha256(bytes));
  });

  it('leaves a 64 MiB part with the wrong digest unreceived, also as a retry of a stored part', async () => {
    const tail = randomBytes(1000);
    const part = randomBytes(P);
    const total = P + tail.length;
    const first = await send('POST', undefined, tail, { 'content-range': `bytes ${P}-${total - 1}/${total}` });
    expect(first.status).toBe(201);
    const id = first.json().id as string;
    const range = { 'content-range': `bytes 0-${P - 1}/${total}` };
    const corrupt = Buffer.from(part);
    corrupt[P - 1] ^= 0xff; // the last byte differs: only the digest tells
    const wrong = await send('PUT', id, corrupt, { ...range, 'content-digest': digestOf(part) });
    expectCode(wrong, 400, 'contentDigestMismatch');
    expect(await received(id)).toBe(`uploading ${P}-${total - 1}`);
    const right = await send('PUT', id, part, { ...range, 'content-digest': digestOf(part) });
    expect(right.status).toBe(201);
    // The content is complete: a retry with a wrong digest changes nothing.
    expectCode(
      await send('PUT', id, corrupt, { ...range, 'content-digest': digestOf(part) }),
      400,
      'contentDigestMismatch',
    );
    const back = await download(owner, id, token);
    expect(sha256(back.body)).toBe(sha256(Buffer.concat([part, tail])));
  });

  it('answers Repr-Digest for a content stored by one request with its digest, on GET, ranged GET and HEAD', async () => {
    const bytes = randomBytes(5000);
    const stored = await send('POST', undefined, bytes, { 'content-digest': digestOf(bytes) });
    expect(stored.status).toBe(201);
    const id = stored.json().id as string;
    const whole = await download(owner, id, token);
    const ranged = await download(owner, id, token, 'bytes=10-19');
    const head = await call(contentsUrl(owner, id), { method: 'HEAD', token });
    const named = `${digestOf(bytes)}, ${await crcOf(bytes)}`;
    for (const answer of [whole, ranged, head]) expect(answer.headers.get('repr-digest')).toBe(named);
    // Without a digest sent, S3's own CRC-64/NVME is still named.
    const plain = await send('POST', undefined, bytes, {});
    expect((await download(owner, plain.json().id as string, token)).headers.get('repr-digest')).toBe(
      await crcOf(bytes),
    );
  });

  it('names the CRC-64/NVME of a content sent in three parts, last part first, that the file itself has', async () => {
    const bytes = randomBytes(2 * P + 1000);
    const total = bytes.length;
    const partOf = (k: number) => bytes.subarray(k * P, Math.min((k + 1) * P, total));
    const rangeOf = (k: number) => `bytes ${k * P}-${Math.min((k + 1) * P, total) - 1}/${total}`;
    const last = await send('POST', undefined, partOf(2), { 'content-range': rangeOf(2) });
    expect(last.status).toBe(201);
    const id = last.json().id as string;
    expect((await send('PUT', id, partOf(0), { 'content-range': rangeOf(0) })).status).toBe(200);
    expect((await send('PUT', id, partOf(1), { 'content-range': rangeOf(1) })).status).toBe(201);
    const head = await call(contentsUrl(owner, id), { method: 'HEAD', token });
    expect(head.headers.get('repr-digest')).toBe(await crcOf(bytes));
    const ranged = await download(owner, id, token, 'bytes=5-9');
    expect(ranged.headers.get('repr-digest')).toBe(await crcOf(bytes));
  });

  it('refuses a malformed field, and ignores algorithms it does not check', async () => {
    const bytes = randomBytes(100);
    for (const field of ['sha-256=abc', 'sha-256=:AAAA:', 'sha-256=:not base64!:']) {
      expectCode(await send('POST', undefined, bytes, { 'content-digest': field }), 400, 'invalidContentDigest');
    }
    const other = `sha-512=:${createHash('sha512').update(randomBytes(1)).digest('base64')}:`;
    const accepted = await send('POST', undefined, bytes, { 'content-digest': other });
    expect(accepted.status).toBe(201);
    const both = await send('POST', undefined, bytes, { 'content-digest': `${other}, ${digestOf(bytes)}` });
    expect(both.status).toBe(201);
  });
});
