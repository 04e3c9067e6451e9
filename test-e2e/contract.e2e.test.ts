// The running system against its contract, services/gateway/openapi.yaml: calls for every operation
// and for each documented status that can be brought about from outside (through the test stack's
// gateway, a gateway whose services are down (503), one whose services never answer (504), and
// sign-in services with tight rate limits (429)). Every answer the helpers saw is checked: status
// documented for its operation, body valid against the response schema, documented headers present
// and well-formed. Operations and statuses nothing exercised are printed; an /v1, /auth or
// /sessions operation that nothing exercised fails the test.
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Contract, startRecording, stopRecording, type Exchange } from './support/contract';
import { call, contentsUrl, download, newOwner, postPart, putPart, rawRequest } from './support/http';
import { TestPki, type Issued } from './support/pki';
import { closedPort } from './support/proxies';
import { startFront, startService, type ServiceHandle } from './support/replicas';
import { admin, approve, authenticate, challenge, newApiKey, refresh, registerUser, signIn } from './support/signin';
import { testStack, tokenFor } from './support/stack';

const P = 64 * 1024 * 1024;
const GiB30 = 30 * 2 ** 30;

describe('the API contract (openapi.yaml) against the running system', () => {
  let contract: Contract;
  let exchanges: Exchange[];
  const started: ServiceHandle[] = [];
  let silent: Server | null = null;
  const owner = newOwner();
  let token: string;
  let otherToken: string;

  beforeAll(async () => {
    contract = await Contract.load();
    exchanges = startRecording();
    token = await tokenFor([owner]);
    otherToken = await tokenFor([randomUUID()]);
  });

  afterAll(async () => {
    stopRecording();
    await Promise.all(started.map((s) => s.stop()));
    silent?.closeAllConnections();
    await new Promise((resolve) => (silent ? silent.close(resolve) : resolve(undefined)));
  });

  /** Runs `calls`, then checks every answer they got against the contract; returns their `operationId status`. */
  async function conforming(calls: () => Promise<unknown>): Promise<string[]> {
    const from = exchanges.length;
    await calls();
    const mine = exchanges.slice(from);
    const findings = mine.flatMap((e) =>
      contract.check(e).map((problem) => `${e.method} ${new URL(e.url).pathname} → ${e.status}: ${problem}`),
    );
    expect(findings).toEqual([]);
    return mine.map((e) => `${contract.operationFor(e.method, new URL(e.url).pathname)?.operationId} ${e.status}`);
  }

  const head = (url: string, auth?: string) => call(url, { method: 'HEAD', token: auth });
  const host = () => new URL(testStack().gatewayUrl).host;

  it('Upload (POST /v1/{ownerId}/contents): 201, 400, 401, 403, 411, 413', async () => {
    const got = await conforming(async () => {
      await postPart(owner, token, randomBytes(10), null, 'text/plain');
      await postPart(owner, token, randomBytes(10), 'bytes 0-9/20');
      await postPart(owner, token, randomBytes(10), 'bytes 9-1/10');
      await postPart(owner, token, randomBytes(10), null, 'not a media type');
      await postPart(owner, '', randomBytes(10), null);
      await call(contentsUrl(owner), {
        method: 'POST',
        body: randomBytes(10),
        headers: { authorization: 'Bearer not.a.jwt' },
      });
      await postPart(owner, otherToken, randomBytes(10), null);
      await rawRequest(
        `POST /v1/${owner}/contents HTTP/1.1\nHost: ${host()}\nAuthorization: Bearer ${token}\nContent-Range: bytes 0-9/10\nConnection: close`,
      );
      await rawRequest(
        `POST /v1/${owner}/contents HTTP/1.1\nHost: ${host()}\nAuthorization: Bearer ${token}\nContent-Length: ${P + 1}\nConnection: close`,
        randomBytes(1024),
      );
      await postPart(owner, token, randomBytes(10), `bytes 0-9/${GiB30 + 1}`);
    });
    expect(new Set(got)).toEqual(
      new Set(['Upload 201', 'Upload 400', 'Upload 401', 'Upload 403', 'Upload 411', 'Upload 413']),
    );
  });

  it('UploadByParts (PUT): 200, 201, 400, 401, 403, 404, 409, 411, 413', async () => {
    const got = await conforming(async () => {
      const { id } = (await postPart(owner, token, randomBytes(10), 'bytes 0-9/30')).json() as { id: string };
      await putPart(owner, id, token, randomBytes(10), 'bytes 10-19/30');
      await putPart(owner, id, token, randomBytes(10), 'bytes 20-29/30');
      const { id: open } = (await postPart(owner, token, randomBytes(10), 'bytes 0-9/30')).json() as { id: string };
      await putPart(owner, open, token, randomBytes(10), 'bytes 19-10/30');
      await putPart(owner, open, token, randomBytes(5), 'bytes 10-19/30');
      await putPart(owner, open, '', randomBytes(10), 'bytes 10-19/30');
      await putPart(owner, open, otherToken, randomBytes(10), 'bytes 10-19/30');
      await putPart(owner, randomUUID(), token, randomBytes(10), 'bytes 10-19/30');
      await putPart(owner, open, token, randomBytes(10), 'bytes 10-19/40');
      await rawRequest(
        `PUT /v1/${owner}/contents/${open} HTTP/1.1\nHost: ${host()}\nAuthorization: Bearer ${token}\nContent-Range: bytes 10-19/30\nConnection: close`,
      );
      await putPart(owner, open, token, randomBytes(10), `bytes ${GiB30}-${GiB30 + 9}/*`);
    });
    expect(new Set(got)).toEqual(
      new Set([
        'Upload 201',
        'UploadByParts 200',
        'UploadByParts 201',
        ...[400, 401, 403, 404, 409, 411, 413].map((s) => `UploadByParts ${s}`),
      ]),
    );
  });

  it('Download (GET): 200, 206, 400, 401, 403, 404, 409, 416; UploadStatus (HEAD): 200, 400, 401, 403, 404', async () => {
    const got = await conforming(async () => {
      const { id: ready } = (await postPart(owner, token, randomBytes(100), null, 'application/pdf')).json() as {
        id: string;
      };
      const { id: open } = (await postPart(owner, token, randomBytes(10), 'bytes 0-9/30')).json() as { id: string };
      await download(owner, ready, token);
      await download(owner, ready, token, 'bytes 0-9/100');
      await download(owner, ready, token, 'bytes=10-19');
      await download(owner, ready, token, 'bytes=-5');
      await download(owner, ready, token, 'bytes=abc');
      await call(contentsUrl(owner, 'not-a-uuid'), { token });
      await download(owner, ready, '');
      await download(owner, ready, otherToken);
      await download(owner, randomUUID(), token);
      await download(owner, open, token);
      await download(owner, ready, token, 'bytes=100-');
      await head(contentsUrl(owner, ready), token);
      await head(contentsUrl(owner, open), token);
      await head(contentsUrl(owner, 'not-a-uuid'), token);
      await head(contentsUrl(owner, ready));
      await head(contentsUrl(owner, ready), otherToken);
      await head(contentsUrl(owner, randomUUID()), token);
    });
    expect(new Set(got)).toEqual(
      new Set([
        'Upload 201',
        ...[200, 206, 400, 401, 403, 404, 409, 416].map((s) => `Download ${s}`),
        ...[200, 400, 401, 403, 404].map((s) => `UploadStatus ${s}`),
      ]),
    );
  });

  it('DirectParts, DirectPartSent (direct transfer): 200, 201, 400, 401, 403, 404, 409; Download 307', async () => {
    const json = (url: string, body: unknown, auth?: string) =>
      call(url, {
        method: 'POST',
        body: JSON.stringify(body),
        headers: { 'content-type': 'application/json' },
        token: auth,
      });
    const got = await conforming(async () => {
      const { id } = (await postPart(owner, token, randomBytes(10), `bytes ${P}-${P + 9}/${P + 10}`)).json() as {
        id: string;
      };
      const parts = `${contentsUrl(owner, id)}/direct-parts`;
      await json(`${contentsUrl(owner, randomUUID())}/direct-parts`, { parts: [{ part: 1 }] }, token);
      await json(parts, { parts: [{ part: 1 }] });
      await json(parts, { parts: [{ part: 1 }] }, otherToken);
      await json(parts, { parts: [{ part: 0 }] }, token);
      await json(`${parts}/1`, { etag: '"00000000000000000000000000000000"' }, token);
      const asked = await json(parts, { parts: [{ part: 1 }] }, token);
      const [target] = (asked.json() as { parts: { url: string; headers: Record<string, string> }[] }).parts;
      const sent = await fetch(target!.url, { method: 'PUT', body: randomBytes(P), headers: target!.headers });
      await json(`${parts}/1`, { etag: sent.headers.get('etag') }, token);
      await call(contentsUrl(owner, id), { headers: { prefer: 'redirect' }, token, redirect: 'manual' });
      await json(parts, { parts: [{ part: 1 }] }, token);
    });
    expect(new Set(got)).toEqual(
      new Set([
        'Upload 201',
        'Download 307',
        ...[200, 400, 401, 403, 404, 409].map((s) => `DirectParts ${s}`),
        ...[201, 409].map((s) => `DirectPartSent ${s}`),
      ]),
    );
  });

  it('Receipt (GET .../receipt): 200, 400, 401, 403, 404, 409', async () => {
    const receipt = (id: string, auth?: string) => call(`${contentsUrl(owner, id)}/receipt`, { token: auth });
    const got = await conforming(async () => {
      const { id: ready } = (await postPart(owner, token, randomBytes(100), null)).json() as { id: string };
      const { id: open } = (await postPart(owner, token, randomBytes(10), 'bytes 0-9/30')).json() as { id: string };
      await receipt(ready, token);
      await receipt('not-a-uuid', token);
      await receipt(ready);
      await receipt(ready, otherToken);
      await receipt(randomUUID(), token);
      await receipt(open, token);
    });
    expect(new Set(got)).toEqual(new Set(['Upload 201', ...[200, 400, 401, 403, 404, 409].map((s) => `Receipt ${s}`)]));
  });

  it('ListContents (GET /v1/{ownerId}/contents): 200, 400, 401, 403; DeleteContent: 204, 400, 401, 403, 404', async () => {
    const list = (query: string, auth?: string) => call(`${contentsUrl(owner)}${query}`, { token: auth });
    const del = (id: string, auth?: string) => call(contentsUrl(owner, id), { method: 'DELETE', token: auth });
    const got = await conforming(async () => {
      const { id: ready } = (await postPart(owner, token, randomBytes(100), null)).json() as { id: string };
      const { id: open } = (await postPart(owner, token, randomBytes(10), 'bytes 0-9/30')).json() as { id: string };
      const first = (await list('?limit=1', token)).json() as { 'next-cursor': string };
      await list(`?limit=1000&cursor=${first['next-cursor']}`, token);
      await list('?limit=0', token);
      await list('?cursor=nonsense', token);
      await list('');
      await list('', otherToken);
      await del('not-a-uuid', token);
      await del(ready);
      await del(ready, otherToken);
      await del(ready, token);
      await del(open, token);
      await del(open, token);
    });
    expect(new Set(got)).toEqual(
      new Set([
        'Upload 201',
        ...[200, 400, 401, 403].map((s) => `ListContents ${s}`),
        ...[204, 400, 401, 403, 404].map((s) => `DeleteContent ${s}`),
      ]),
    );
  });

  it('CreateWebhook: 201, 400, 401, 403, 409; ListWebhooks: 200, 400, 401, 403; DeleteWebhook: 204, 400, 401, 403, 404', async () => {
    const hookOwner = newOwner();
    const hookToken = await tokenFor([hookOwner]);
    const hooks = `${testStack().gatewayUrl}/v1/${hookOwner}/webhooks`;
    const create = (body: unknown, auth?: string) =>
      call(hooks, {
        method: 'POST',
        token: auth,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const registration = { url: 'https://example.com/hook', events: ['content.completed'] };
    const got = await conforming(async () => {
      const { id } = (await create(registration, hookToken)).json() as { id: string };
      for (let i = 0; i < 10; i++) await create(registration, hookToken); // the eleventh: 409
      await create({ url: 'ftp://example.com/', events: ['content.completed'] }, hookToken);
      await create(registration);
      await create(registration, otherToken);
      await call(hooks, { token: hookToken });
      await call(`${testStack().gatewayUrl}/v1/not-a-uuid/webhooks`, { token: hookToken });
      await call(hooks);
      await call(hooks, { token: otherToken });
      await call(`${hooks}/${id}`, { method: 'DELETE', token: hookToken });
      await call(`${hooks}/${id}`, { method: 'DELETE', token: hookToken });
      await call(`${hooks}/not-a-uuid`, { method: 'DELETE', token: hookToken });
      await call(`${hooks}/${id}`, { method: 'DELETE' });
      await call(`${hooks}/${id}`, { method: 'DELETE', token: otherToken });
    });
    expect(new Set(got)).toEqual(
      new Set([
        ...[201, 400, 401, 403, 409].map((s) => `CreateWebhook ${s}`),
        ...[200, 400, 401, 403].map((s) => `ListWebhooks ${s}`),
        ...[204, 400, 401, 403, 404].map((s) => `DeleteWebhook ${s}`),
      ]),
    );
  });

  describe('sign-in and sessions', () => {
    const pki = new TestPki();
    let root: Issued;
    let user: Issued;
    let apiKey: string;
    beforeAll(async () => {
      root = pki.root('Contract Root');
      await admin('trust', 'add', '--cert', root.certPath);
      user = pki.issue('contract-user', root);
      await registerUser(user, [owner]);
      apiKey = await newApiKey();
    });

    it('AuthenticateByCert: 200, 400, 403, 406, 413', async () => {
      const untrusted = pki.issue('contract-untrusted', pki.root('Contract Untrusted Root'));
      await registerUser(untrusted);
      const got = await conforming(async () => {
        await authenticate(user.pem, { apiKey });
        await authenticate(user.pem, {});
        await authenticate(user.pem, { apiKey: 'no-such-key' });
        await authenticate('not a certificate', { apiKey });
        await authenticate(untrusted.pem, { apiKey });
        await authenticate(Buffer.alloc(2 * 1024 * 1024 + 1, 'A'), { apiKey });
      });
      expect(new Set(got)).toEqual(new Set([200, 400, 403, 406, 413].map((s) => `AuthenticateByCert ${s}`)));
    });

    it('ApproveCert: 200, 400, 403, 413; RefreshSession: 200, 400, 403', async () => {
      const got = await conforming(async () => {
        const pair = await signIn(user, apiKey);
        await approve(undefined, randomBytes(48), apiKey);
        await challenge(user, apiKey);
        await approve(user.thumbprint, randomBytes(48), apiKey);
        await approve(user.thumbprint, Buffer.alloc(5000), apiKey);
        const next = await refresh(pair.Sid, pair.RefreshToken, apiKey);
        expect(next.status).toBe(200);
        await refresh(undefined, undefined, apiKey);
        await refresh(next.json().Sid, randomBytes(32).toString('base64url'), apiKey);
      });
      expect(new Set(got)).toEqual(
        new Set([
          'AuthenticateByCert 200',
          ...[200, 400, 403, 413].map((s) => `ApproveCert ${s}`),
          ...[200, 400, 403].map((s) => `RefreshSession ${s}`),
        ]),
      );
    });

    it('AuthenticateByCert, ApproveCert and RefreshSession: 429 over the rate limit', async () => {
      const limits = {
        RATE_LIMIT_ENABLED: 'true',
        RATE_LIMIT_PER_KEY_POINTS: '1',
        RATE_LIMIT_PER_KEY_SECONDS: '60',
        LOG_LEVEL: 'warn',
      };
      const gw = await startFront('contract-limits', limits, started);
      const got = await conforming(async () => {
        const limited = await newApiKey();
        const q = `apiKey=${limited}`;
        for (let i = 0; i < 3; i++) {
          await call(`${gw.url}/auth/v5.13/authenticate-by-cert?${q}`, { method: 'POST', body: 'not a certificate' });
          await call(`${gw.url}/auth/v5.13/approve-cert?thumbprint=${user.thumbprint}&${q}`, {
            method: 'POST',
            body: randomBytes(48),
          });
          await call(
            `${gw.url}/sessions/v5.13/sessions/refresh?auth.sid=${'A'.repeat(64)}&refresh-token=x&api-key=${limited}`,
            { method: 'POST' },
          );
        }
      });
      expect(got).toEqual(expect.arrayContaining(['AuthenticateByCert 429', 'ApproveCert 429', 'RefreshSession 429']));
    });
  });

  it('the tus door: TusDiscovery, TusCreate, TusOffset, TusAppend, TusTerminate with their refusals', async () => {
    const tus = `${testStack().gatewayUrl}/v1/${owner}/tus`;
    const T = { 'tus-resumable': '1.0.0' };
    const auth = { ...T, authorization: `Bearer ${token}` };
    const bytes = { 'content-type': 'application/offset+octet-stream' };
    const sha1 = (data: Buffer) => `sha1 ${createHash('sha1').update(data).digest('base64')}`;
    const got = await conforming(async () => {
      await call(tus, { method: 'OPTIONS' });
      const created = await call(tus, { method: 'POST', headers: { ...auth, 'upload-length': '20' } });
      const url = new URL(created.headers.get('location')!, testStack().gatewayUrl).toString();
      await call(`${url}`, { method: 'OPTIONS' });
      await call(tus, { method: 'POST', headers: { ...auth, 'upload-length': 'x' } });
      await call(tus, { method: 'POST', headers: { ...T, 'upload-length': '20' } });
      await call(tus, {
        method: 'POST',
        headers: { ...T, authorization: `Bearer ${otherToken}`, 'upload-length': '20' },
      });
      await call(tus, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'upload-length': '20' } });
      await call(tus, { method: 'POST', headers: { ...auth, 'upload-length': String(GiB30 + 1) } });
      await call(tus, { method: 'POST', body: randomBytes(5), headers: { ...auth, 'upload-length': '20' } });
      await call(tus, {
        method: 'POST',
        body: randomBytes(5),
        headers: { ...auth, ...bytes, 'upload-length': '20', 'upload-checksum': sha1(randomBytes(5)) },
      });
      const patch = (at: string, headers: Record<string, string>, body: Buffer = randomBytes(10)) =>
        call(at, { method: 'PATCH', body, headers: { ...bytes, 'upload-offset': '0', ...headers } });
      await patch(url, auth);
      await patch(url, auth);
      await patch(url, { ...auth, 'upload-offset': 'ten' });
      await patch(url, T);
      await patch(url, { ...T, authorization: `Bearer ${otherToken}` });
      await patch(`${tus}/${randomUUID()}`, auth);
      await patch(url, { ...auth, 'content-type': 'text/plain' });
      await patch(url, { authorization: `Bearer ${token}`, 'upload-offset': '10' });
      await patch(url, { ...auth, 'upload-offset': '10', 'upload-checksum': sha1(randomBytes(10)) });
      await rawRequest(
        `PATCH ${new URL(url).pathname} HTTP/1.1\nHost: ${host()}\nAuthorization: Bearer ${token}\nTus-Resumable: 1.0.0\nUpload-Offset: 10\nContent-Type: application/offset+octet-stream\nTransfer-Encoding: chunked\nConnection: close`,
        '0\r\n\r\n',
      );
      for (const headers of [
        auth,
        T,
        { ...T, authorization: `Bearer ${otherToken}` },
        { authorization: `Bearer ${token}` },
      ])
        await call(url, { method: 'HEAD', headers });
      await call(`${tus}/not-a-uuid`, { method: 'HEAD', headers: auth });
      await call(`${tus}/${randomUUID()}`, { method: 'HEAD', headers: auth });
      for (const headers of [T, { ...T, authorization: `Bearer ${otherToken}` }, { authorization: `Bearer ${token}` }])
        await call(url, { method: 'DELETE', headers });
      await call(`${tus}/not-a-uuid`, { method: 'DELETE', headers: auth });
      await call(url, { method: 'DELETE', headers: auth });
      await call(url, { method: 'DELETE', headers: auth });
    });
    expect(new Set(got)).toEqual(
      new Set([
        'TusDiscovery 204',
        'TusUploadDiscovery 204',
        ...[201, 400, 401, 403, 412, 413, 415, 460].map((s) => `TusCreate ${s}`),
        ...[204, 400, 401, 403, 404, 409, 411, 412, 415, 460].map((s) => `TusAppend ${s}`),
        ...[200, 400, 401, 403, 404, 412].map((s) => `TusOffset ${s}`),
        ...[204, 400, 401, 403, 404, 412].map((s) => `TusTerminate ${s}`),
      ]),
    );
  });

  it('the IETF resumable upload door: discovery, creation, offset, append and cancellation with their refusals', async () => {
    const door = `${testStack().gatewayUrl}/v1/${owner}/resumable`;
    const V = { 'upload-draft-interop-version': '8' };
    const auth = { ...V, authorization: `Bearer ${token}` };
    const partial = { 'content-type': 'application/partial-upload' };
    const got = await conforming(async () => {
      await call(door, { method: 'OPTIONS' });
      await call(door, { method: 'OPTIONS', headers: { 'upload-draft-interop-version': '4' } });
      const created = await call(door, {
        method: 'POST',
        headers: { ...auth, 'upload-complete': '?0', 'upload-length': '20' },
      });
      const url = new URL(created.headers.get('location')!, testStack().gatewayUrl).toString();
      await call(url, { method: 'OPTIONS' });
      await call(door, { method: 'POST', headers: auth });
      await call(door, { method: 'POST', headers: { ...V, 'upload-complete': '?0' } });
      await call(door, {
        method: 'POST',
        headers: { ...V, authorization: `Bearer ${otherToken}`, 'upload-complete': '?0' },
      });
      await call(door, {
        method: 'POST',
        body: randomBytes(5),
        headers: { ...auth, 'upload-complete': '?1', 'upload-length': '9' },
      });
      await call(door, {
        method: 'POST',
        headers: { ...auth, 'upload-complete': '?0', 'upload-length': String(GiB30 + 1) },
      });
      await rawRequest(
        `POST ${new URL(door).pathname} HTTP/1.1\nHost: ${host()}\nAuthorization: Bearer ${token}\nUpload-Complete: ?0\nTransfer-Encoding: chunked\nConnection: close`,
        '0\r\n\r\n',
      );
      const append = (at: string, headers: Record<string, string>, body: Buffer = randomBytes(10)) =>
        call(at, {
          method: 'PATCH',
          body,
          headers: { ...partial, 'upload-offset': '0', 'upload-complete': '?0', ...headers },
        });
      await append(url, auth);
      await append(url, auth);
      await append(url, { ...auth, 'upload-complete': 'yes' });
      await append(url, V);
      await append(url, { ...V, authorization: `Bearer ${otherToken}` });
      await append(`${door}/${randomUUID()}`, auth);
      await append(url, { ...auth, 'content-type': 'application/offset+octet-stream' });
      await rawRequest(
        `PATCH ${new URL(url).pathname} HTTP/1.1\nHost: ${host()}\nAuthorization: Bearer ${token}\nUpload-Offset: 10\nUpload-Complete: ?0\nContent-Type: application/partial-upload\nTransfer-Encoding: chunked\nConnection: close`,
        '0\r\n\r\n',
      );
      await append(url, { ...auth, 'upload-offset': '10', 'upload-complete': '?1' });
      for (const headers of [auth, V, { ...V, authorization: `Bearer ${otherToken}` }])
        await call(url, { method: 'HEAD', headers });
      await call(`${door}/not-a-uuid`, { method: 'HEAD', headers: auth });
      await call(`${door}/${randomUUID()}`, { method: 'HEAD', headers: auth });
      for (const headers of [V, { ...V, authorization: `Bearer ${otherToken}` }])
        await call(url, { method: 'DELETE', headers });
      await call(`${door}/not-a-uuid`, { method: 'DELETE', headers: auth });
      await call(url, { method: 'DELETE', headers: auth });
      await call(url, { method: 'DELETE', headers: auth });
    });
    expect(new Set(got)).toEqual(
      new Set([
        'ResumableDiscovery 204',
        'ResumableDiscovery 400',
        'ResumableUploadDiscovery 204',
        ...[201, 400, 401, 403, 409, 411, 413].map((s) => `ResumableCreate ${s}`),
        ...[200, 204, 400, 401, 403, 404, 409, 411, 415].map((s) => `ResumableAppend ${s}`),
        ...[204, 400, 401, 403, 404].map((s) => `ResumableOffset ${s}`),
        ...[204, 400, 401, 403, 404].map((s) => `ResumableCancel ${s}`),
      ]),
    );
  });

  it('every operation: 503 from the gateway when its services are down', async () => {
    const [down1, down2, down3] = [await closedPort(), await closedPort(), await closedPort()];
    const gw = await startService('gateway', {
      logDir: join(testStack().logDir, 'contract-down'),
      readyPath: '/healthz',
      env: {
        LOG_LEVEL: 'error',
        CONTENT_SERVICE_URL: `http://127.0.0.1:${down1}`,
        AUTH_SERVICE_URL: `http://127.0.0.1:${down2}`,
        SESSION_SERVICE_URL: `http://127.0.0.1:${down3}`,
      },
    });
    started.push(gw);
    const got = await conforming(() => everyOperation(gw.url));
    expect(new Set(got)).toEqual(new Set(OPERATIONS.map((o) => `${o} 503`)));
  });

  it('every operation: 504 from the gateway when its services do not answer in time', async () => {
    // Takes requests (and their bodies) and never answers.
    silent = createServer((req) => req.resume());
    await new Promise<void>((resolve) => silent!.listen(0, '127.0.0.1', resolve));
    const hold = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
    const gw = await startService('gateway', {
      logDir: join(testStack().logDir, 'contract-slow'),
      readyPath: '/healthz',
      env: {
        LOG_LEVEL: 'error',
        UPSTREAM_TIMEOUT_MS: '1000',
        SIGNIN_UPSTREAM_TIMEOUT_MS: '1000', // its own limit (30 s by default): three sign-in calls waited 90 s
        CONTENT_SERVICE_URL: hold,
        AUTH_SERVICE_URL: hold,
        SESSION_SERVICE_URL: hold,
      },
    });
    started.push(gw);
    const got = await conforming(() => everyOperation(gw.url));
    expect(new Set(got)).toEqual(new Set(OPERATIONS.map((o) => `${o} 504`)));
  });

  const OPERATIONS = [
    'Upload',
    'UploadByParts',
    'Download',
    'UploadStatus',
    'Receipt',
    'DirectParts',
    'DirectPartSent',
    'ListContents',
    'DeleteContent',
    'CreateWebhook',
    'ListWebhooks',
    'DeleteWebhook',
    'AuthenticateByCert',
    'ApproveCert',
    'RefreshSession',
    'TusDiscovery',
    'TusUploadDiscovery',
    'TusCreate',
    'TusOffset',
    'TusAppend',
    'TusTerminate',
    'ResumableDiscovery',
    'ResumableUploadDiscovery',
    'ResumableCreate',
    'ResumableOffset',
    'ResumableAppend',
    'ResumableCancel',
  ];
  /** One call of each /v1, /auth and /sessions operation against `gateway`. */
  async function everyOperation(gateway: string): Promise<void> {
    const v1 = `${gateway}/v1/${owner}/contents`;
    const id = randomUUID();
    const auth = { authorization: `Bearer ${token}` };
    await call(v1, { method: 'POST', body: randomBytes(10), headers: auth });
    await call(`${v1}/${id}`, {
      method: 'PUT',
      body: randomBytes(10),
      headers: { ...auth, 'content-range': 'bytes 0-9/10' },
    });
    await call(`${v1}/${id}`, { headers: auth });
    await call(`${v1}/${id}`, { method: 'HEAD', headers: auth });
    await call(`${v1}/${id}/receipt`, { headers: auth });
    const json = { ...auth, 'content-type': 'application/json' };
    await call(`${v1}/${id}/direct-parts`, { method: 'POST', body: '{"parts":[{"part":1}]}', headers: json });
    await call(`${v1}/${id}/direct-parts/1`, { method: 'POST', body: '{"etag":"x"}', headers: json });
    await call(`${v1}?limit=10`, { headers: auth });
    await call(`${v1}/${id}`, { method: 'DELETE', headers: auth });
    const hooks = `${gateway}/v1/${owner}/webhooks`;
    await call(hooks, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ url: 'https://example.com/hook', events: ['content.completed'] }),
    });
    await call(hooks, { headers: auth });
    await call(`${hooks}/${id}`, { method: 'DELETE', headers: auth });
    await call(`${gateway}/auth/v5.13/authenticate-by-cert?apiKey=k`, { method: 'POST', body: 'cert' });
    await call(`${gateway}/auth/v5.13/approve-cert?thumbprint=${'A'.repeat(40)}&apiKey=k`, {
      method: 'POST',
      body: randomBytes(48),
    });
    await call(`${gateway}/sessions/v5.13/sessions/refresh?auth.sid=${'A'.repeat(64)}&refresh-token=x&api-key=k`, {
      method: 'POST',
    });
    const tus = `${gateway}/v1/${owner}/tus`;
    const T = { ...auth, 'tus-resumable': '1.0.0' };
    await call(tus, { method: 'OPTIONS' });
    await call(`${tus}/${id}`, { method: 'OPTIONS' });
    await call(tus, { method: 'POST', headers: { ...T, 'upload-length': '10' } });
    await call(`${tus}/${id}`, { method: 'HEAD', headers: T });
    await call(`${tus}/${id}`, {
      method: 'PATCH',
      body: randomBytes(10),
      headers: { ...T, 'upload-offset': '0', 'content-type': 'application/offset+octet-stream' },
    });
    await call(`${tus}/${id}`, { method: 'DELETE', headers: T });
    const door = `${gateway}/v1/${owner}/resumable`;
    const R = { ...auth, 'upload-draft-interop-version': '8' };
    await call(door, { method: 'OPTIONS' });
    await call(`${door}/${id}`, { method: 'OPTIONS' });
    await call(door, { method: 'POST', headers: { ...R, 'upload-complete': '?0', 'upload-length': '10' } });
    await call(`${door}/${id}`, { method: 'HEAD', headers: R });
    await call(`${door}/${id}`, {
      method: 'PATCH',
      body: randomBytes(10),
      headers: { ...R, 'upload-offset': '0', 'upload-complete': '?1', 'content-type': 'application/partial-upload' },
    });
    await call(`${door}/${id}`, { method: 'DELETE', headers: R });
  }

  it('the gateway’s own operations: health, the description (YAML and JSON) and its reference page', async () => {
    const got = await conforming(async () => {
      for (const path of ['/healthz', '/openapi.yaml', '/openapi.json', '/docs'])
        await call(`${testStack().gatewayUrl}${path}`);
    });
    expect(new Set(got)).toEqual(
      new Set(['Health 200', 'ApiDescription 200', 'ApiDescriptionJson 200', 'ApiReference 200']),
    );
  });

  it('exercised every /v1, /auth and /sessions operation (and prints the statuses nothing brought about)', () => {
    const left = contract.unexercised();
    console.log(
      `openapi.yaml: ${exchanges.length} answers checked; documented but not exercised:\n` +
        (left.map((o) => `  ${o.operationId} (${o.method} ${o.path}): ${o.statuses.join(', ')}`).join('\n') ||
          '  nothing'),
    );
    const api = contract.operations.filter((o) => /^\/(v1|auth|sessions)\//.test(o.path));
    const never = api.filter((o) =>
      left.some((l) => l.operationId === o.operationId && l.statuses.length === Object.keys(o.responses).length),
    );
    expect(never.map((o) => o.operationId)).toEqual([]);
  });
});
