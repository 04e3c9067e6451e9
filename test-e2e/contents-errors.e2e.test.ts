import { randomBytes, randomUUID } from 'node:crypto';
import { DevKeys } from '@cp/credentials';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, startService, backingEnv } from '../tools/devstack/stack';
import { testStack, tokenFor } from './support/stack';
import { call, contentsUrl, download, newOwner, P, postPart, putPart, rawRequest, sha256 } from './support/http';

/** Every row of the /v1 error table: status, error body, and the stored content unchanged. */
describe('errors on /v1', () => {
  const owner = newOwner();
  let token: string;
  const readyData = randomBytes(1000);
  let readyId: string;
  let uploadingId: string;

  const expectError = (
    answer: { status: number; headers: Headers | Record<string, string>; body: Buffer | string },
    status: number,
    code?: string,
  ) => {
    expect(answer.status).toBe(status);
    const contentType =
      answer.headers instanceof Headers ? answer.headers.get('content-type') : answer.headers['content-type'];
    expect(contentType).toBe('application/json; charset=utf-8');
    const body = JSON.parse(answer.body.toString());
    expect(Object.keys(body).sort()).toEqual(['id', 'message', 'status-code', 'track-id']);
    expect(body['status-code']).toBe(status);
    expect(body.id).toMatch(/^urn:error:contents:[a-z][A-Za-z]+$/);
    if (code) expect(body.id).toBe(`urn:error:contents:${code}`);
    expect(body.message.length).toBeGreaterThan(5);
    expect(body['track-id']).toBeTruthy();
    return body;
  };

  const head = (id: string) => call(contentsUrl(owner, id), { method: 'HEAD', token });

  beforeAll(async () => {
    token = await tokenFor([owner]);
    readyId = (await postPart(owner, token, readyData, null)).json().id;
    const first = await postPart(owner, token, randomBytes(100), 'bytes 0-99/300');
    expect(first.status).toBe(201);
    uploadingId = first.json().id;
  });

  afterEach(async () => {
    // Whatever the error, the stored contents are exactly as before.
    const ready = await download(owner, readyId, token);
    expect(ready.status).toBe(200);
    expect(sha256(ready.body)).toBe(sha256(readyData));
    const status = await head(uploadingId);
    expect(status.headers.get('x-upload-state')).toBe('uploading');
    expect(status.headers.get('x-received-ranges')).toBe('0-99');
    expect(status.headers.get('x-content-total')).toBe('300');
  });

  describe('400', () => {
    it('rejects a malformed Content-Range', async () => {
      for (const range of ['bytes abc', 'bytes 0-99', 'items 0-99/300', 'bytes */300']) {
        expectError(await putPart(owner, uploadingId, token, randomBytes(100), range), 400, 'invalidRange');
      }
    });
    it('rejects a PUT without Content-Range', async () => {
      const r = await call(contentsUrl(owner, uploadingId), { method: 'PUT', body: randomBytes(10), token });
      expectError(r, 400, 'missingContentRange');
    });
    it('rejects a start after the end, and an end at or past the total', async () => {
      expectError(await putPart(owner, uploadingId, token, randomBytes(10), 'bytes 110-100/300'), 400, 'invalidRange');
      expectError(await putPart(owner, uploadingId, token, randomBytes(10), 'bytes 290-300/300'), 400, 'invalidRange');
      expectError(await putPart(owner, uploadingId, token, randomBytes(100), 'bytes 250-349/*'), 400, 'rangePastTotal');
    });
    it('rejects a body whose length differs from the range', async () => {
      expectError(
        await putPart(owner, uploadingId, token, randomBytes(50), 'bytes 100-199/300'),
        400,
        'bodyLengthMismatch',
      );
      // chunked: the length is only known at the end of the body
      const { gatewayUrl } = testStack();
      const host = new URL(gatewayUrl).host;
      const short = await rawRequest(
        `PUT /v1/${owner}/contents/${uploadingId} HTTP/1.1\nHost: ${host}\nAuthorization: Bearer ${token}\nContent-Range: bytes 100-199/300\nTransfer-Encoding: chunked\nConnection: close`,
        `32\r\n${'x'.repeat(50)}\r\n0\r\n\r\n`,
      );
      expectError(short, 400, 'bodyLengthMismatch');
      const long = await rawRequest(
        `PUT /v1/${owner}/contents/${uploadingId} HTTP/1.1\nHost: ${host}\nAuthorization: Bearer ${token}\nContent-Range: bytes 100-109/300\nTransfer-Encoding: chunked\nConnection: close`,
        `14\r\n${'x'.repeat(20)}\r\n0\r\n\r\n`,
      );
      expectError(long, 400, 'bodyLengthMismatch');
    });
    it('rejects ids that are not UUIDs', async () => {
      expectError(await download(owner, 'not-a-uuid', token), 400, 'invalidId');
      expectError(
        await call(`${testStack().gatewayUrl}/v1/12345/contents`, { method: 'POST', body: 'x', token }),
        400,
        'invalidId',
      );
      // a segment that cannot be percent-decoded at all
      expectError(await call(`${testStack().gatewayUrl}/v1/${owner}/contents/%E0%A4%A`, { token }), 400, 'invalidId');
      expectError(
        await call(`${testStack().gatewayUrl}/v1/%E0%A4%A/contents`, { method: 'POST', body: 'x', token }),
        400,
        'invalidId',
      );
    });
    it('rejects a malformed Range on download', async () => {
      expectError(await download(owner, readyId, token, 'bytes=abc'), 400, 'invalidRange');
      expectError(await download(owner, readyId, token, 'bytes=5-1'), 400, 'invalidRange');
    });
  });

  describe('401', () => {
    it('rejects missing, malformed, expired, not-yet-valid, foreign-signed and wrong-audience credentials', async () => {
      expectError(await download(owner, readyId, ''), 401, 'missingCredentials');
      for (const authorization of ['Basic dXNlcjpwYXNz', 'Bearer', 'Bearer a b']) {
        expectError(await call(contentsUrl(owner, readyId), { headers: { authorization } }), 401);
      }
      expectError(await download(owner, readyId, 'not.a.jwt'), 401, 'invalidToken');
      expectError(await download(owner, readyId, await tokenFor([owner], { ttlSeconds: -300 })), 401, 'invalidToken');
      expectError(
        await download(owner, readyId, await tokenFor([owner], { notBefore: Math.floor(Date.now() / 1000) + 600 })),
        401,
        'invalidToken',
      );
      expectError(
        await download(owner, readyId, await tokenFor([owner], { audience: 'someone-else' })),
        401,
        'invalidToken',
      );
      expectError(
        await download(owner, readyId, await tokenFor([owner], { issuer: 'https://elsewhere.example' })),
        401,
        'invalidToken',
      );
      const foreign = await new DevKeys(mkdtempSync(join(tmpdir(), 'foreign-keys-'))).mint({ owners: [owner] });
      expectError(await download(owner, readyId, foreign), 401, 'invalidToken');
      // and nothing is written with bad credentials
      expectError(
        await putPart(owner, uploadingId, 'not.a.jwt', randomBytes(100), 'bytes 100-199/300'),
        401,
        'invalidToken',
      );
    });
  });

  describe('403 and 404', () => {
    it('refuses credentials of another owner, and hides contents of other owners', async () => {
      const stranger = newOwner();
      const strangerToken = await tokenFor([stranger]);
      expectError(await download(owner, readyId, strangerToken), 403, 'ownerForbidden');
      expectError(
        await putPart(owner, uploadingId, strangerToken, randomBytes(100), 'bytes 100-199/300'),
        403,
        'ownerForbidden',
      );
      expectError(await postPart(owner, strangerToken, randomBytes(10), null), 403, 'ownerForbidden');
      expectError(await download(stranger, readyId, strangerToken), 404, 'contentNotFound');
      expectError(
        await putPart(stranger, uploadingId, strangerToken, randomBytes(100), 'bytes 100-199/300'),
        404,
        'contentNotFound',
      );
      expectError(await download(owner, randomUUID(), token), 404, 'contentNotFound');
    });

    it('answers a refusal of a 64 MiB part while the part is still on its way, every time', async () => {
      // Refused as soon as its headers are read, the body still coming: the client must get the
      // answer, not a connection reset under it (8 tries; a reset shows as a failed fetch).
      const part = randomBytes(P);
      for (let i = 0; i < 8; i++) {
        const answer = await putPart(owner, randomUUID(), token, part, `bytes 0-${P - 1}/${2 * P}`);
        expectError(answer, 404, 'contentNotFound');
      }
    });
  });

  describe('409', () => {
    it('refuses a total different from the declared one', async () => {
      expectError(
        await putPart(owner, uploadingId, token, randomBytes(100), 'bytes 100-199/400'),
        409,
        'totalConflict',
      );
    });
    it('refuses to download an unfinished content', async () => {
      expectError(await download(owner, uploadingId, token), 409, 'contentNotReady');
    });
    it('refuses different bytes for a ready content, and takes the same bytes as a retry', async () => {
      const changed = Buffer.from(readyData);
      changed[500] ^= 0xff;
      expectError(await putPart(owner, readyId, token, changed, 'bytes 0-999/1000'), 409, 'contentAlreadyComplete');
      const same = await putPart(owner, readyId, token, readyData.subarray(100, 200), 'bytes 100-199/1000');
      expect(same.status).toBe(200);
      expect(same.json()).toEqual({ id: readyId, content: { id: readyId }, 'is-completed': true });
    });
    it('refuses a range that partly overlaps bytes already received', async () => {
      expectError(await putPart(owner, uploadingId, token, randomBytes(100), 'bytes 50-149/300'), 409, 'rangeOverlap');
      expectError(await putPart(owner, uploadingId, token, randomBytes(300), 'bytes 0-299/300'), 409, 'rangeOverlap');
    });
  });

  describe('411, 413, 416', () => {
    it('asks for a length when there is neither Content-Length nor a chunked body', async () => {
      const host = new URL(testStack().gatewayUrl).host;
      const r = await rawRequest(
        `PUT /v1/${owner}/contents/${uploadingId} HTTP/1.1\nHost: ${host}\nAuthorization: Bearer ${token}\nContent-Range: bytes 100-199/300\nConnection: close`,
      );
      expectError(r, 411, 'lengthRequired');
    });
    it('refuses a part longer than 64 MiB and a total above 30 GiB', async () => {
      const host = new URL(testStack().gatewayUrl).host;
      const tooLong = await rawRequest(
        `POST /v1/${owner}/contents HTTP/1.1\nHost: ${host}\nAuthorization: Bearer ${token}\nContent-Range: bytes 0-${P}/${2 * P}\nContent-Length: ${P + 1}\nConnection: close`,
        randomBytes(1024),
      );
      expectError(tooLong, 413, 'partTooLarge');
      const oneShot = await rawRequest(
        `POST /v1/${owner}/contents HTTP/1.1\nHost: ${host}\nAuthorization: Bearer ${token}\nContent-Length: ${P + 1}\nConnection: close`,
        randomBytes(1024),
      );
      expectError(oneShot, 413, 'partTooLarge');
      expectError(
        await postPart(owner, token, randomBytes(10), `bytes 0-9/${30 * 2 ** 30 + 1}`),
        413,
        'contentTooLarge',
      );
      expectError(
        await putPart(owner, uploadingId, token, randomBytes(10), `bytes ${30 * 2 ** 30}-${30 * 2 ** 30 + 9}/*`),
        413,
        'contentTooLarge',
      );
    });
    it('answers 416 with the total for a range past the end', async () => {
      const r = await download(owner, readyId, token, 'bytes=1000-');
      expectError(r, 416, 'rangeNotSatisfiable');
      expect(r.headers.get('content-range')).toBe('bytes */1000');
    });
  });

  describe('503', () => {
    it('answers 503 with Retry-After when S3 does not answer, and keeps nothing', async () => {
      const deadPort = await freePort();
      const { prefix, keysDir, logDir } = testStack();
      const service = await startService('content-service', {
        logDir,
        readyPath: '/healthz',
        env: {
          ...backingEnv(),
          LOG_LEVEL: 'warn',
          S3_ENDPOINT: `http://127.0.0.1:${deadPort}`,
          S3_BUCKET: `${prefix}-contents`,
          JWT_ISSUER: 'content-platform-dev',
          JWT_JWKS_FILE: join(keysDir, 'jwks.json'),
        },
      });
      try {
        // Ready all the same (S3 is every pod's backend; the API answers its own 503), while the
        // diagnostic names the backend that is down.
        expect((await fetch(`${service.adminUrl}/readyz`)).status).toBe(200);
        const deps = await fetch(`${service.adminUrl}/healthz/deps`);
        expect(deps.status).toBe(503);
        expect(((await deps.json()) as { checks: Record<string, string> }).checks).toEqual({
          redis: 'ok',
          s3: 'unavailable',
        });
        const r = await call(`${service.url}/v1/${owner}/contents`, { method: 'POST', body: randomBytes(100), token });
        expectError(r, 503, 'storageUnavailable');
        expect(r.headers.get('retry-after')).toBeTruthy();
        const put = await call(`${service.url}/v1/${owner}/contents/${uploadingId}`, {
          method: 'PUT',
          body: randomBytes(100),
          headers: { 'content-range': 'bytes 100-199/300' },
          token,
        });
        expectError(put, 503, 'storageUnavailable');
      } finally {
        expect(await service.stop()).toBe(0);
      }
    });

    it('answers 503 from the gateway when the content-service is down', async () => {
      const deadPort = await freePort();
      const gateway = await startService('gateway', {
        logDir: testStack().logDir,
        readyPath: '/healthz',
        env: { LOG_LEVEL: 'warn', CONTENT_SERVICE_URL: `http://127.0.0.1:${deadPort}` },
      });
      try {
        const r = await call(`${gateway.url}/v1/${owner}/contents/${readyId}`, { token });
        expectError(r, 503, 'serviceUnavailable');
        expect(r.headers.get('retry-after')).toBeTruthy();
      } finally {
        await gateway.stop();
      }
    });
  });
});
