import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { exchange, type RawExchange, type RawResponse, type RawStep } from './support/rawHttp';
import { startService } from '../tools/devstack/stack';
import { testStack, tokenFor } from './support/stack';
import { call, contentsUrl, newOwner, postPart, putPart } from './support/http';

/**
 * Bad input through the gateway, as bytes on a socket: a table of what was once answered wrong
 * (500s, a 40 s hang, bare parser answers, an answer that overtook a stored write, paths the
 * proxy rewrote), then generated headers, ranges, paths and bodies. Every answer must come within
 * 5 s, be no 5xx, and carry the error format of its route family; the fixtures (a ready content
 * and an uploading one) must come out byte for byte as they went in.
 */
describe('bad input through the gateway', () => {
  const owner = newOwner();
  const fuzzOwner = newOwner();
  let token: string;
  let fuzzToken: string;
  let port: number;
  const readyData = randomBytes(1000);
  const uploadingData = randomBytes(300);
  let readyId: string;
  let uploadingId: string;
  let cases = 0;

  beforeAll(async () => {
    port = Number(new URL(testStack().gatewayUrl).port);
    token = await tokenFor([owner]);
    fuzzToken = await tokenFor([fuzzOwner]);
    const ready = await postPart(owner, token, readyData, null, 'application/octet-stream');
    expect(ready.status).toBe(201);
    readyId = ready.json().id;
    const first = await postPart(owner, token, uploadingData.subarray(0, 100), 'bytes 0-99/300');
    expect(first.status).toBe(201);
    uploadingId = first.json().id;
  });

  // Paths under /auth/v5.x and /sessions/v5.x answer {Code, Message}, routed or not (an /internal
  // one is refused in that format too); everything else the /v1 format.
  const families = (path: string): 'signin' | 'contents' =>
    /^\/(auth|sessions)\/v5\.\d+(\/|$)/.test(path) ? 'signin' : 'contents';

  /** The checks every answer to bad input passes. Returns the final answers. */
  function expectSane(x: RawExchange, path: string, label: string): RawResponse[] {
    cases += 1;
    const where = `${label}: ${JSON.stringify(x.responses.map((r) => r.status))} ${x.leftover.slice(0, 120)}`;
    if (x.finals.length === 0) throw new Error(`no answer within 5 s (${where})`);
    expect([where, x.finals[0]!.atMs < 5000]).toEqual([where, true]);
    for (const r of x.finals) {
      expect([where, r.status < 500]).toEqual([where, true]);
      if (r.status >= 400) expectErrorBody(r, families(path), where);
    }
    return x.finals;
  }

  function expectErrorBody(r: RawResponse, family: 'signin' | 'contents', where: string): void {
    expect([where, r.headers['content-type']]).toEqual([where, 'application/json; charset=utf-8']);
    const body = JSON.parse(r.body.toString('utf8')) as Record<string, unknown>;
    if (family === 'signin') {
      expect([where, Object.keys(body).sort()]).toEqual([where, ['Code', 'Message']]);
      expect(body.Code).toMatch(/^[A-Z][A-Za-z]+$/);
    } else {
      expect([where, Object.keys(body).sort()]).toEqual([where, ['id', 'message', 'status-code', 'track-id']]);
      expect(body['status-code']).toBe(r.status);
      expect(body.id).toMatch(/^urn:error:contents:[a-z][A-Za-z]+$/);
      // The request id a client quotes is in the head too, whoever answered (the parser's refusals included).
      expect([where, r.headers['x-request-id']]).toEqual([where, body['track-id']]);
    }
  }

  // Half-closing makes Node drop a request it has not answered yet (no half-open HTTP), so only the
  // cases that stop mid-body half-close; the others ask for Connection: close or get it.
  const send = (steps: RawStep[], opts?: { halfClose?: boolean }) =>
    exchange(port, steps, { deadlineMs: 6000, halfClose: false, ...opts });
  const head = (requestLine: string, headers: string[]) =>
    `${requestLine}\r\n${headers.map((h) => `${h}\r\n`).join('')}\r\n`;
  const contents = () => `/v1/${owner}/contents`;
  const bearer = () => `Authorization: Bearer ${token}`;

  interface TableCase {
    name: string;
    path: string;
    steps: () => RawStep[];
    /** Final statuses expected, in order. */
    statuses: number[];
    code?: string;
    halfClose?: boolean;
    within?: number;
  }

  const table: TableCase[] = [
    // What S3 refused (500/503 before): decided at the edge.
    {
      name: 'non-ASCII Content-Type',
      path: '/v1',
      statuses: [400],
      code: 'invalidContentType',
      steps: () => [
        head(`POST ${contents()} HTTP/1.1`, [
          'Host: g',
          bearer(),
          'Content-Type: text/plain; charset=\xff\xe9',
          'Content-Length: 3',
        ]) + 'abc',
      ],
    },
    {
      name: '4 KB Content-Type',
      path: '/v1',
      statuses: [400],
      code: 'invalidContentType',
      steps: () => [
        head(`POST ${contents()} HTTP/1.1`, [
          'Host: g',
          bearer(),
          `Content-Type: text/${'a'.repeat(4096)}`,
          'Content-Length: 3',
        ]) + 'abc',
      ],
    },
    {
      name: 'Content-Type without subtype',
      path: '/v1',
      statuses: [400],
      code: 'invalidContentType',
      steps: () => [
        head(`POST ${contents()} HTTP/1.1`, ['Host: g', bearer(), 'Content-Type: text', 'Content-Length: 3']) + 'abc',
      ],
    },
    {
      name: '12 KB api key on refresh',
      path: '/sessions/v5.13/sessions/refresh',
      statuses: [400],
      steps: () => [
        head(
          `POST /sessions/v5.13/sessions/refresh?auth.sid=AB&refresh-token=CD&api-key=${'k'.repeat(12 * 1024)} HTTP/1.1`,
          ['Host: g', 'Content-Length: 0'],
        ),
      ],
    },
    {
      name: '12 KB X-Kontur-Apikey on authenticate',
      path: '/auth/v5.13/authenticate-by-cert',
      statuses: [400],
      steps: () => [
        head('POST /auth/v5.13/authenticate-by-cert HTTP/1.1', [
          'Host: g',
          `X-Kontur-Apikey: ${'k'.repeat(12 * 1024)}`,
          'Content-Length: 1',
        ]) + 'x',
      ],
    },
    {
      name: '12 KB auth.sid on /v1',
      path: '/v1',
      statuses: [400],
      code: 'credentialTooLong',
      steps: () => [
        head(`GET ${contents()}/${readyId} HTTP/1.1`, ['Host: g', `Authorization: auth.sid ${'A'.repeat(12 * 1024)}`]),
      ],
    },
    // Decided from the head, without waiting for the body.
    {
      name: 'Content-Length above the part size, no body',
      path: '/v1',
      statuses: [413],
      code: 'partTooLarge',
      halfClose: false,
      within: 1000,
      steps: () => [head(`POST ${contents()} HTTP/1.1`, ['Host: g', bearer(), 'Content-Length: 67108865'])],
    },
    {
      name: 'Expect: 100-continue with a part too large gets 413 and no 100',
      path: '/v1',
      statuses: [413],
      code: 'partTooLarge',
      halfClose: false,
      within: 1000,
      steps: () => [
        head(`PUT ${contents()}/${uploadingId} HTTP/1.1`, [
          'Host: g',
          bearer(),
          'Expect: 100-continue',
          'Content-Range: bytes 0-67108864/300000000',
          'Content-Length: 67108865',
        ]),
      ],
    },
    {
      name: 'Expect: 100-continue with a range invalid on its face',
      path: '/v1',
      statuses: [400],
      code: 'invalidRange',
      halfClose: false,
      within: 1000,
      steps: () => [
        head(`PUT ${contents()}/${uploadingId} HTTP/1.1`, [
          'Host: g',
          bearer(),
          'Expect: 100-continue',
          'Content-Range: bytes 200-100/300',
          'Content-Length: 101',
        ]),
      ],
    },
    {
      name: 'Expect: 100-continue with Content-Length not the range length',
      path: '/v1',
      statuses: [400],
      code: 'bodyLengthMismatch',
      halfClose: false,
      within: 1000,
      steps: () => [
        head(`PUT ${contents()}/${uploadingId} HTTP/1.1`, [
          'Host: g',
          bearer(),
          'Expect: 100-continue',
          'Content-Range: bytes 100-199/300',
          'Content-Length: 50',
        ]),
      ],
    },
    {
      name: 'unknown Expect',
      path: '/v1',
      statuses: [417],
      code: 'expectationFailed',
      steps: () => [head(`GET ${contents()}/${readyId} HTTP/1.1`, ['Host: g', bearer(), 'Expect: teapot'])],
    },
    // Parser refusals, in the contract's format.
    {
      name: 'body cut short',
      path: '/v1',
      statuses: [400],
      halfClose: true,
      steps: () => [
        head(`PUT ${contents()}/${uploadingId} HTTP/1.1`, [
          'Host: g',
          bearer(),
          'Content-Range: bytes 100-199/300',
          'Content-Length: 100',
        ]) + 'x'.repeat(40),
        100,
      ],
    },
    {
      name: 'bad chunk size',
      path: '/v1',
      statuses: [400],
      steps: () => [
        head(`PUT ${contents()}/${uploadingId} HTTP/1.1`, [
          'Host: g',
          bearer(),
          'Content-Range: bytes 100-199/300',
          'Transfer-Encoding: chunked',
        ]) + '10\r\n0123456789abcdef\r\nzz\r\n',
      ],
    },
    {
      name: 'Content-Length and chunked',
      path: '/v1',
      statuses: [400],
      steps: () => [
        head(`POST ${contents()} HTTP/1.1`, ['Host: g', bearer(), 'Content-Length: 5', 'Transfer-Encoding: chunked']) +
          '5\r\nabcde\r\n0\r\n\r\n',
      ],
    },
    {
      name: 'Transfer-Encoding: gzip',
      path: '/v1',
      statuses: [400],
      steps: () => [head(`POST ${contents()} HTTP/1.1`, ['Host: g', bearer(), 'Transfer-Encoding: gzip']) + 'abc'],
    },
    {
      name: 'Transfer-Encoding: gzip, chunked (a coding other than chunked: stored still coded)',
      path: '/v1',
      statuses: [400],
      steps: () => [
        head(`POST ${contents()} HTTP/1.1`, ['Host: g', bearer(), 'Transfer-Encoding: gzip, chunked']) +
          '5\r\nabcde\r\n0\r\n\r\n',
      ],
    },
    {
      name: 'invalid Content-Length',
      path: '/v1',
      statuses: [400],
      steps: () => [head(`POST ${contents()} HTTP/1.1`, ['Host: g', bearer(), 'Content-Length: 1x'])],
    },
    {
      name: 'two different Content-Lengths',
      path: '/auth/v5.13/authenticate-by-cert',
      statuses: [400],
      steps: () => [
        head('POST /auth/v5.13/authenticate-by-cert HTTP/1.1', ['Host: g', 'Content-Length: 1', 'Content-Length: 2']) +
          'ab',
      ],
    },
    {
      name: 'control byte in a header',
      path: '/v1',
      statuses: [400],
      steps: () => [head(`GET ${contents()}/${readyId} HTTP/1.1`, ['Host: g', bearer(), 'X-Thing: a\x01b'])],
    },
    {
      name: 'bare LF line ends',
      path: '/v1',
      statuses: [400],
      steps: () => [`GET ${contents()}/${readyId} HTTP/1.1\nHost: g\n${bearer()}\n\n`],
    },
    {
      name: 'no Host',
      path: '/v1',
      statuses: [400],
      code: 'missingHost',
      steps: () => [head(`GET ${contents()}/${readyId} HTTP/1.1`, [bearer()])],
    },
    {
      name: 'unknown method',
      path: '/v1',
      statuses: [400],
      steps: () => [head(`BREW ${contents()} HTTP/1.1`, ['Host: g'])],
    },
    {
      name: 'CONNECT (a tunnel)',
      path: '/v1',
      statuses: [400],
      steps: () => [head(`CONNECT 127.0.0.1:8081 HTTP/1.1`, ['Host: 127.0.0.1:8081'])],
    },
    {
      name: 'huge URL',
      path: '/v1',
      statuses: [431],
      steps: () => [head(`GET /v1/${'a'.repeat(20_000)} HTTP/1.1`, ['Host: g'])],
    },
    {
      name: 'huge header',
      path: '/auth/v5.13/approve-cert',
      statuses: [431],
      steps: () => [
        head('POST /auth/v5.13/approve-cert HTTP/1.1', [
          'Host: g',
          `X-Big: ${'b'.repeat(20_000)}`,
          'Content-Length: 0',
        ]),
      ],
    },
    {
      name: 'garbage request line',
      path: '/v1',
      statuses: [400],
      steps: () => ['\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n'],
    },
    // RFC 9112: one Host; no path the proxy would rewrite.
    {
      name: 'two Host headers',
      path: '/v1',
      statuses: [400],
      code: 'duplicateHost',
      steps: () => [head(`GET ${contents()}/${readyId} HTTP/1.1`, ['Host: g', 'Host: h', bearer()])],
    },
    {
      name: '// in a /v1 path',
      path: '/v1',
      statuses: [400],
      code: 'invalidPath',
      steps: () => [head(`GET /v1//${owner}/contents/${readyId} HTTP/1.1`, ['Host: g', bearer()])],
    },
    {
      name: '\\ in a /v1 path',
      path: '/v1',
      statuses: [400],
      code: 'invalidPath',
      steps: () => [head(`GET /v1\\${owner}/contents/${readyId} HTTP/1.1`, ['Host: g', bearer()])],
    },
    {
      name: '\\ carrying a path to /internal',
      path: '/sessions/v5.13\\..\\..\\internal/sessions',
      statuses: [400],
      steps: () => [
        head('POST /sessions/v5.13\\..\\..\\internal/sessions HTTP/1.1', ['Host: g', 'Content-Length: 2']) + '{}',
      ],
    },
    {
      name: 'encoded dot segments',
      path: '/v1',
      statuses: [400],
      code: 'invalidPath',
      steps: () => [head(`GET /v1/%2e%2e/internal/sessions HTTP/1.1`, ['Host: g'])],
    },
  ];

  it.each(table.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
    const x = await send(c.steps(), { halfClose: c.halfClose });
    const finals = expectSane(x, c.path, c.name);
    expect(finals.map((r) => r.status)).toEqual(c.statuses);
    if (c.within) expect(finals[0]!.atMs).toBeLessThan(c.within);
    if (c.code) expect(JSON.parse(finals[0]!.body.toString()).id).toBe(`urn:error:contents:${c.code}`);
    // Refusals from the head never invite the body.
    if (c.within) expect(x.responses.filter((r) => r.status === 100)).toEqual([]);
    // The gateway closes after an answer to bad framing.
    if (finals[0]!.status >= 400) expect(finals.at(-1)!.headers.connection).toBe('close');
  });

  it("refuses an /internal path under /auth or /sessions in that API's {Code, Message} format", async () => {
    for (const path of [
      '/auth/v5.13/internal',
      '/auth/v5.13/approve-cert/internal',
      '/sessions/v5.13/sessions/Internal',
    ]) {
      const res = await fetch(`${testStack().gatewayUrl}${path}`, { method: 'POST' });
      expect([path, res.status, Object.keys((await res.json()) as object).sort()]).toEqual([
        path,
        404,
        ['Code', 'Message'],
      ]);
    }
  });

  it('answers the junk pipelined after a complete POST only after that POST, which is created', async () => {
    const x = await send([
      head(`POST /v1/${fuzzOwner}/contents HTTP/1.1`, [
        'Host: g',
        `Authorization: Bearer ${fuzzToken}`,
        'Content-Range: bytes 0-9/10',
        'Content-Length: 10',
      ]) +
        '0123456789' +
        'JUNKJUNKJU',
    ]);
    const finals = expectSane(x, '/v1', 'pipelined junk');
    expect(finals.map((r) => r.status)).toEqual([201, 400]);
    const id = JSON.parse(finals[0]!.body.toString()).id as string;
    const back = await call(contentsUrl(fuzzOwner, id), { token: fuzzToken });
    expect(back.status).toBe(200);
    expect(back.body.toString()).toBe('0123456789');
  });

  it('answers junk after two pipelined POSTs only after both, which are created', async () => {
    const post = (bytes: string) =>
      head(`POST /v1/${fuzzOwner}/contents HTTP/1.1`, [
        'Host: g',
        `Authorization: Bearer ${fuzzToken}`,
        `Content-Length: ${bytes.length}`,
      ]) + bytes;
    const x = await send([post('first') + post('second') + 'GET / HTTP/1.1\r\nBad Header\r\n\r\n']);
    const finals = expectSane(x, '/v1', 'two pipelined then junk');
    expect(finals.map((r) => r.status)).toEqual([201, 201, 400]);
    const bodies = await Promise.all(
      finals
        .slice(0, 2)
        .map((r) => call(contentsUrl(fuzzOwner, JSON.parse(r.body.toString()).id), { token: fuzzToken })),
    );
    expect(bodies.map((b) => b.body.toString())).toEqual(['first', 'second']);
  });

  it('answers 408 in the contract format to a client silent mid-body, storing nothing', async () => {
    const stack = testStack();
    const gateway = await startService('gateway', {
      logDir: stack.logDir,
      env: {
        LOG_LEVEL: 'warn',
        CONTENT_SERVICE_URL: stack.services['content-service']!.url,
        CLIENT_IDLE_TIMEOUT_MS: '1000',
      },
    });
    try {
      const x = await exchange(
        gateway.port,
        [
          head(`PUT ${contents()}/${uploadingId} HTTP/1.1`, [
            'Host: g',
            bearer(),
            'Content-Range: bytes 100-199/300',
            'Content-Length: 100',
          ]) + 'q'.repeat(30),
        ],
        {
          deadlineMs: 5000,
          halfClose: false,
        },
      );
      const finals = expectSane(x, '/v1', 'silent mid-body');
      expect(finals.map((r) => r.status)).toEqual([408]);
      expect(JSON.parse(finals[0]!.body.toString()).id).toBe('urn:error:contents:requestTimeout');
      expect(finals[0]!.atMs).toBeGreaterThanOrEqual(900);
    } finally {
      await gateway.stop();
    }
  });

  it('aborts upstream a part whose body broke off, so the part can be sent again at once', async () => {
    // Part 1 (the final one) first, so that part 0 is an aligned 64 MiB part streamed into UploadPart under a claim.
    const P = 64 * 1024 * 1024;
    const data = randomBytes(P + 10);
    const created = await postPart(fuzzOwner, fuzzToken, data.subarray(P), `bytes ${P}-${P + 9}/${P + 10}`);
    expect(created.status).toBe(201);
    const id = created.json().id as string;
    const x = await send(
      [
        head(`PUT /v1/${fuzzOwner}/contents/${id} HTTP/1.1`, [
          'Host: g',
          `Authorization: Bearer ${fuzzToken}`,
          `Content-Range: bytes 0-${P - 1}/${P + 10}`,
          `Content-Length: ${P}`,
        ]),
        data.subarray(0, 1024 * 1024),
        200,
      ],
      { halfClose: true },
    );
    expect(expectSane(x, '/v1', 'part cut short').map((r) => r.status)).toEqual([400]);
    // Had the proxied request stayed open, the content-service would hold the part's claim (503 partWriting) until its idle timeout.
    let again = await putPart(fuzzOwner, id, fuzzToken, data.subarray(0, P), `bytes 0-${P - 1}/${P + 10}`);
    for (let tries = 0; again.status === 503 && tries < 3; tries += 1) {
      await new Promise((r) => setTimeout(r, 1000));
      again = await putPart(fuzzOwner, id, fuzzToken, data.subarray(0, P), `bytes 0-${P - 1}/${P + 10}`);
    }
    expect(again.status).toBe(201);
    const back = await call(contentsUrl(fuzzOwner, id), { token: fuzzToken });
    expect(back.body.equals(data)).toBe(true);
  });

  it('passes a head on before its body: the content-service refuses a bad token with no body byte sent', async () => {
    const x = await send([
      head(`PUT ${contents()}/${uploadingId} HTTP/1.1`, [
        'Host: g',
        'Authorization: Bearer not-a-token',
        'Content-Range: bytes 100-199/300',
        'Content-Length: 100',
      ]),
    ]);
    const finals = expectSane(x, '/v1', 'head only');
    expect(finals[0]!.status).toBe(401);
    expect(finals[0]!.atMs).toBeLessThan(2000);
  });

  it('sends 100 Continue and then takes the body when the head is fine', async () => {
    const x = await send([
      head(`POST /v1/${fuzzOwner}/contents HTTP/1.1`, [
        'Host: g',
        `Authorization: Bearer ${fuzzToken}`,
        'Expect: 100-continue',
        'Content-Type: text/plain; charset=utf-8',
        'Content-Length: 4',
        'Connection: close',
      ]),
      300,
      'abcd',
    ]);
    expect(x.responses.map((r) => r.status)).toEqual([100, 201]);
    expect(x.responses[0]!.atMs).toBeLessThan(300);
  });

  it('answers 416 with the real total when the legacy Range names another total', async () => {
    const answer = await call(contentsUrl(owner, readyId), { token, headers: { range: 'bytes 0-99/12' } });
    expect(answer.status).toBe(416);
    expect(answer.headers.get('content-range')).toBe(`bytes */${readyData.length}`);
    expect(answer.json().id).toBe('urn:error:contents:rangeTotalMismatch');
    const right = await call(contentsUrl(owner, readyId), {
      token,
      headers: { range: `bytes 0-99/${readyData.length}` },
    });
    expect(right.status).toBe(200);
    expect(right.body.equals(readyData.subarray(0, 100))).toBe(true);
  });

  it('refuses an oversized api key or sid at the services too, never with 503', async () => {
    const { services } = testStack();
    const refresh = await fetch(
      `${services['session-service']!.url}/sessions/v5.13/sessions/refresh?auth.sid=AB&refresh-token=CD`,
      {
        method: 'POST',
        headers: { 'x-kontur-apikey': 'k'.repeat(12 * 1024) },
      },
    );
    expect(refresh.status).toBe(403);
    expect(((await refresh.json()) as { Code: string }).Code).toBe('InvalidApiKey');
    const authenticate = await fetch(`${services['auth-service']!.url}/auth/v5.13/authenticate-by-cert`, {
      method: 'POST',
      headers: { 'x-kontur-apikey': 'k'.repeat(12 * 1024), 'content-type': 'application/octet-stream' },
      body: 'not a certificate',
    });
    expect(authenticate.status).toBe(403);
    expect(((await authenticate.json()) as { Code: string }).Code).toBe('InvalidApiKey');
    const get = await fetch(`${services['content-service']!.url}/v1/${owner}/contents/${readyId}`, {
      headers: { authorization: `auth.sid ${'A'.repeat(12 * 1024)}` },
    });
    expect(get.status).toBe(401);
    const post = await fetch(`${services['content-service']!.url}/v1/${owner}/contents`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'text/plain; charset=\xff', 'content-length': '3' },
      body: 'abc',
    });
    expect(post.status).toBe(400);
    expect(((await post.json()) as { id: string }).id).toBe('urn:error:contents:invalidContentType');
  });

  // ---- generated cases --------------------------------------------------------------------

  const latin1Char = fc.integer({ min: 0, max: 255 }).map((n) => String.fromCharCode(n));
  const printable = fc.integer({ min: 0x20, max: 0x7e }).map((n) => String.fromCharCode(n));
  const headerValue = fc.oneof(
    fc.string({ unit: latin1Char, maxLength: 40 }).map((s) => s.replace(/[\r\n]/g, '')),
    fc.string({ unit: printable, maxLength: 300 }),
    fc.constantFrom(
      'text/plain',
      'text/plain; charset=utf-8',
      'a/b; c="d\\"e"',
      'x/y;;;',
      '',
      ' ',
      '/',
      'a/',
      'a/b; c',
      'a/b; =d',
      '\xe9/\xe9',
    ),
    fc.integer({ min: 200, max: 5000 }).map((n) => `text/${'x'.repeat(n)}`),
  );

  it('generated Content-Type, Authorization and X-Request-Id values on POST and GET', async () => {
    await fc.assert(
      fc.asyncProperty(
        headerValue,
        fc.constantFrom('content-type', 'authorization', 'x-request-id', 'cookie', 'x-kontur-apikey'),
        fc.boolean(),
        async (value, name, write) => {
          const headers = ['Host: g', `Authorization: Bearer ${fuzzToken}`, 'Connection: close'].filter(
            (h) => !(name === 'authorization' && h.startsWith('Authorization')),
          );
          headers.push(`${name}: ${value}`);
          const x = write
            ? await send([head(`POST /v1/${fuzzOwner}/contents HTTP/1.1`, [...headers, 'Content-Length: 3']) + 'abc'])
            : await send([head(`GET /v1/${owner}/contents/${readyId} HTTP/1.1`, headers)]);
          const [first] = expectSane(x, '/v1', `${name}: ${JSON.stringify(value)}`);
          if (name === 'content-type' && first!.status === 201)
            expect(/^[\x20-\x7e]{1,255}$/.test(value.trim())).toBe(true);
        },
      ),
      { numRuns: 90 },
    );
  });

  const num = fc.oneof(
    fc.nat({ max: 2000 }),
    fc.constantFrom(0, 99, 999, 1000, 1001, 300, 2 ** 53, '99999999999999999999'),
    fc.bigInt({ min: 0n, max: 10n ** 25n }).map(String),
  );
  const rangeValue = fc.oneof(
    fc
      .tuple(
        fc.constantFrom('bytes ', 'bytes=', 'BYTES=', 'bytes', 'byte=', 'items='),
        fc.option(num),
        fc.constantFrom('-', '--', ''),
        fc.option(num),
        fc.constantFrom('', '/', '/*', '/1000', '/12', '/300', '/abc', ',0-1'),
      )
      .map(([unit, a, dash, b, tail]) => `${unit}${a ?? ''}${dash}${b ?? ''}${tail}`),
    fc.string({ unit: printable, maxLength: 60 }),
  );

  it('generated Range values on downloads, and Content-Range values on writes that cannot store', async () => {
    await fc.assert(
      fc.asyncProperty(rangeValue, fc.boolean(), async (value, isWrite) => {
        if (!isWrite) {
          const x = await send([
            head(`GET /v1/${owner}/contents/${readyId} HTTP/1.1`, [
              'Host: g',
              bearer(),
              `Range: ${value}`,
              'Connection: close',
            ]),
          ]);
          const [r] = expectSane(x, '/v1', `Range: ${value}`);
          expect([200, 206, 400, 416]).toContain(r!.status);
          if (r!.status === 206 || (r!.status === 200 && r!.headers['content-range'])) {
            const m = /^bytes (\d+)-(\d+)\/1000$/.exec(r!.headers['content-range'] ?? '');
            expect(m).not.toBeNull();
            expect(r!.body.equals(readyData.subarray(Number(m![1]), Number(m![2]) + 1))).toBe(true);
          }
          return;
        }
        // A write to the fixtures whose body breaks off: whatever the range, nothing may be stored.
        const target = value.length % 2 ? readyId : uploadingId;
        const x = await send(
          [
            head(`PUT /v1/${owner}/contents/${target} HTTP/1.1`, [
              'Host: g',
              bearer(),
              `Content-Range: ${value}`,
              'Content-Length: 100',
            ]) + 'z'.repeat(60),
          ],
          { halfClose: true },
        );
        const [r] = expectSane(x, '/v1', `Content-Range: ${value}`);
        expect(r!.status).toBeGreaterThanOrEqual(400);
      }),
      { numRuns: 90 },
    );
  });

  const segment = fc.oneof(
    fc.constantFrom(
      'v1',
      'auth',
      'v5.13',
      'v5.x',
      'sessions',
      'refresh',
      'internal',
      'INTERNAL',
      'contents',
      '.',
      '..',
      '%2e%2e',
      '%2F',
      '%5c',
      '',
      '%',
      '%zz',
      '%00',
      'healthz',
      'metrics',
      'approve-cert',
      'authenticate-by-cert',
    ),
    fc.uuid(),
    fc.string({ unit: printable, maxLength: 12 }).map((s) => s.replace(/[ ?#]/g, '')),
  );
  const pathValue = fc
    .tuple(fc.array(segment, { minLength: 1, maxLength: 6 }), fc.constantFrom('/', '/', '/', '\\'))
    .map(([segs, sep]) => `/${segs.join(sep)}`);

  it('generated tus headers on creations and PATCHes: an answer, no 5xx, and offsets that name only stored bytes', async () => {
    // An upload of its own (the fuzz owner's): a PATCH whose generated header happens to be fine
    // stores its bytes, so every PATCH sends bytes of one value, and the content is checked at the end.
    const tusHead = (line: string, headers: string[]) =>
      head(line, ['Host: g', `Authorization: Bearer ${fuzzToken}`, 'Connection: close', ...headers]);
    const created = await send([
      tusHead(`POST /v1/${fuzzOwner}/tus HTTP/1.1`, ['Tus-Resumable: 1.0.0', 'Upload-Length: 64']),
    ]);
    const [made] = expectSane(created, '/v1', 'tus creation');
    expect(made!.status).toBe(201);
    const path = made!.headers['location']!;
    const offsetNow = async () => {
      const x = await send([tusHead(`HEAD ${path} HTTP/1.1`, ['Tus-Resumable: 1.0.0'])]);
      return Number(x.finals[0]!.headers['upload-offset']);
    };
    const tusValue = fc.oneof(
      num.map(String),
      fc.string({ unit: printable, maxLength: 40 }),
      fc.constantFrom(
        '1.0.0',
        '0.2.2',
        '',
        'sha1 AAAA',
        'sha256 ',
        'md5 x',
        'crc32 AAAAAA==',
        'filename YQ==,',
        ' , ',
        '-1',
        '01',
        '1',
        'PATCH',
        'DELETE',
      ),
      fc.constantFrom('application/offset+octet-stream', 'application/offset+octet-stream; x=1', 'text/plain'),
    );
    const names = fc.constantFrom(
      'tus-resumable',
      'upload-offset',
      'upload-length',
      'upload-metadata',
      'upload-checksum',
      'content-type',
      'upload-defer-length',
      'upload-concat',
      'x-http-method-override',
    );
    await fc.assert(
      fc.asyncProperty(
        names,
        tusValue,
        fc.boolean(),
        fc.integer({ min: 0, max: 8 }),
        async (name, value, creation, length) => {
          const at = await offsetNow();
          const fine: Record<string, string> = {
            'tus-resumable': '1.0.0',
            'content-type': 'application/offset+octet-stream',
            ...(creation ? { 'upload-length': '16' } : { 'upload-offset': String(at) }),
            [name]: value,
          };
          const headers = [...Object.entries(fine).map(([n, v]) => `${n}: ${v}`), `Content-Length: ${length}`];
          const line = creation ? `POST /v1/${fuzzOwner}/tus HTTP/1.1` : `PATCH ${path} HTTP/1.1`;
          const x = await send([tusHead(line, headers) + 'a'.repeat(length)]);
          const [answer] = expectSane(x, '/v1', `tus ${creation ? 'POST' : 'PATCH'} ${name}: ${JSON.stringify(value)}`);
          if (!creation) {
            // Whatever was answered, the offset is where a stored PATCH (and only one) put it.
            const after = await offsetNow();
            expect([name, value, after]).toEqual([
              name,
              value,
              answer!.status === 204 ? Number(answer!.headers['upload-offset']) : at,
            ]);
          }
        },
      ),
      { numRuns: 90 },
    );
    const at = await offsetNow();
    expect(at).toBeLessThanOrEqual(64);
    if (at === 64) {
      const got = await call(`${testStack().gatewayUrl}${path.replace('/tus/', '/contents/')}`, { token: fuzzToken });
      expect(got.body.equals(Buffer.alloc(64, 'a'))).toBe(true);
    }
  });

  it('generated IETF resumable upload headers on creations and appends: an answer, no 5xx, offsets of stored bytes only', async () => {
    const doorHead = (line: string, headers: string[]) =>
      head(line, ['Host: g', `Authorization: Bearer ${fuzzToken}`, 'Connection: close', ...headers]);
    const created = await send([
      doorHead(`POST /v1/${fuzzOwner}/resumable HTTP/1.1`, ['Upload-Complete: ?0', 'Upload-Length: 64']),
    ]);
    const [made] = expectSane(created, '/v1', 'resumable creation');
    expect(made!.status).toBe(201);
    const path = made!.headers['location']!;
    const offsetNow = async () => {
      const x = await send([doorHead(`HEAD ${path} HTTP/1.1`, [])]);
      return Number(x.finals[0]!.headers['upload-offset']);
    };
    const value = fc.oneof(
      num.map(String),
      fc.string({ unit: printable, maxLength: 40 }),
      fc.constantFrom('?0', '?1', '?', '?2', 'true', '', '-1', '01', '6', '7', '8', '5', ' 8', '1e3'),
      fc.constantFrom('application/partial-upload', 'application/partial-upload; x=1', 'text/plain', 'a/b'),
    );
    const names = fc.constantFrom(
      'upload-draft-interop-version',
      'upload-complete',
      'upload-offset',
      'upload-length',
      'content-type',
      'upload-limit',
    );
    await fc.assert(
      fc.asyncProperty(
        names,
        value,
        fc.boolean(),
        fc.integer({ min: 0, max: 8 }),
        async (name, v, creation, length) => {
          const at = await offsetNow();
          const fine: Record<string, string> = {
            'upload-draft-interop-version': '8',
            'upload-complete': '?0',
            ...(creation ? { 'upload-length': '16' } : { 'upload-offset': String(at) }),
            ...(creation ? {} : { 'content-type': 'application/partial-upload' }),
            [name]: v,
          };
          const headers = [...Object.entries(fine).map(([n, w]) => `${n}: ${w}`), `Content-Length: ${length}`];
          const line = creation ? `POST /v1/${fuzzOwner}/resumable HTTP/1.1` : `PATCH ${path} HTTP/1.1`;
          const x = await send([doorHead(line, headers) + 'a'.repeat(length)]);
          const [answer] = expectSane(
            x,
            '/v1',
            `resumable ${creation ? 'POST' : 'PATCH'} ${name}: ${JSON.stringify(v)}`,
          );
          if (!creation) {
            const after = await offsetNow();
            const stored = answer!.status === 204 || answer!.status === 200;
            expect([name, v, after]).toEqual([name, v, stored ? Number(answer!.headers['upload-offset']) : at]);
          }
        },
      ),
      { numRuns: 90 },
    );
    const at = await offsetNow();
    expect(at).toBeLessThanOrEqual(64);
    if (at === 64) {
      const got = await call(`${testStack().gatewayUrl}${path.replace('/resumable/', '/contents/')}`, {
        token: fuzzToken,
      });
      expect(got.body.equals(Buffer.alloc(64, 'a'))).toBe(true);
    }
  });

  it('generated paths: answered in their family format, never routed to /internal', async () => {
    await fc.assert(
      fc.asyncProperty(pathValue, fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'OPTIONS'), async (path, method) => {
        const withBody = method === 'POST' || method === 'PUT';
        const x = await send([
          head(`${method} ${path} HTTP/1.1`, [
            'Host: g',
            `Authorization: Bearer ${fuzzToken}`,
            'Connection: close',
            ...(withBody ? ['Content-Length: 2'] : []),
          ]) + (withBody ? '{}' : ''),
        ]);
        const [r] = expectSane(x, path, `${method} ${path}`);
        if (/(^|[/\\])(internal|%2e%2e|\.\.)([/\\]|$)/i.test(path)) expect(r!.status).toBeGreaterThanOrEqual(400);
        if (path.includes('\\') || path.includes('//')) expect(r!.status).toBe(400);
      }),
      { numRuns: 90 },
    );
  });

  const framing = fc.oneof(
    // shorter than declared, then the client stops
    fc.tuple(fc.integer({ min: 1, max: 100 }), fc.integer({ min: 0, max: 99 })).map(([declared, sent]) => ({
      kind: 'short',
      head: [`Content-Length: ${Math.max(declared, sent + 1)}`],
      body: 'y'.repeat(Math.min(sent, Math.max(declared, sent + 1) - 1)),
    })),
    // chunked bodies that break before their last chunk
    fc
      .array(
        fc.oneof(
          fc.constantFrom(
            '5\r\nabcde\r\n',
            'zz\r\n',
            '5\r\nab',
            '-1\r\n',
            '5;ext=\x01\r\nabcde\r\n',
            'fffffffffffffffffff\r\n',
            '3\r\nabc\n',
            '\r\n',
          ),
          fc.string({ unit: latin1Char, maxLength: 10 }),
        ),
        { minLength: 1, maxLength: 4 },
      )
      .map((chunks) => ({
        kind: 'chunked',
        head: ['Transfer-Encoding: chunked'],
        body: chunks.join('').replace(/0\r\n\r\n/g, ''),
      })),
    // conflicting or broken framing headers
    fc
      .constantFrom(
        ['Content-Length: 5', 'Transfer-Encoding: chunked'],
        ['Transfer-Encoding: chunked, gzip'],
        ['Transfer-Encoding: identity'],
        ['Content-Length: -1'],
        ['Content-Length: 0x10'],
        ['Content-Length: 1', 'Content-Length: 1, 2'],
        ['Content-Length: 99999999999999999999'],
      )
      .map((h) => ({ kind: 'headers', head: h, body: 'abcde' })),
  );

  it('generated broken bodies on writes to the fixtures: an answer, and nothing stored', async () => {
    await fc.assert(
      fc.asyncProperty(framing, fc.boolean(), async (f, toUploading) => {
        const target = toUploading ? uploadingId : readyId;
        const range = toUploading ? 'bytes 100-199/300' : 'bytes 0-99/1000';
        const x = await send(
          [
            head(`PUT /v1/${owner}/contents/${target} HTTP/1.1`, [
              'Host: g',
              bearer(),
              `Content-Range: ${range}`,
              ...f.head,
            ]) + f.body,
            50,
          ],
          {
            halfClose: true,
          },
        );
        const [r] = expectSane(x, '/v1', `${f.kind} ${JSON.stringify(f)}`);
        expect(r!.status).toBeGreaterThanOrEqual(400);
      }),
      { numRuns: 60 },
    );
  });

  it('keeps /metrics, /readyz and /healthz/deps of every service off its API port, on its admin port', async () => {
    const { services } = testStack();
    expect(Object.keys(services).sort()).toEqual(['auth-service', 'content-service', 'gateway', 'session-service']);
    for (const [name, { url, adminUrl }] of Object.entries(services)) {
      expect(adminUrl).not.toBe(url);
      for (const path of ['/metrics', '/readyz', '/healthz/deps']) {
        expect([name, path, (await fetch(`${url}${path}`)).status]).toEqual([name, path, 404]);
        expect([name, path, (await fetch(`${adminUrl}${path}`)).status]).toEqual([name, path, 200]);
      }
      // Liveness answers on both: kubelet's liveness probe goes to the API port.
      expect([name, (await fetch(`${url}/healthz`)).status, (await fetch(`${adminUrl}/healthz`)).status]).toEqual([
        name,
        200,
        200,
      ]);
      expect(await (await fetch(`${adminUrl}/metrics`)).text()).toMatch(
        new RegExp(`^http_request_duration_seconds_count\\{[^}]*service="${name}"`, 'm'),
      );
    }
  });

  it('keeps metric route labels of the gateway to a fixed set', async () => {
    const { gatewayAdminUrl } = testStack();
    const text = await (await fetch(`${gatewayAdminUrl}/metrics`)).text();
    const routes = new Set(
      [...text.matchAll(/http_request_duration_seconds_count\{[^}]*route="([^"]*)"/g)].map((m) => m[1]),
    );
    expect(routes.size).toBeGreaterThan(0);
    // Requests refused from their head are counted too (the unknown Expect above: 417).
    expect(text).toMatch(/http_request_duration_seconds_count\{[^}]*status="417"/);
    for (const route of routes)
      expect([
        'other',
        '/v1/:ownerId/contents',
        '/v1/:ownerId/contents/:contentId',
        '/v1/:ownerId/contents/:contentId/receipt',
        '/v1/:ownerId/contents/:contentId/direct-parts',
        '/v1/:ownerId/contents/:contentId/direct-parts/:part',
        '/v1/:ownerId/webhooks',
        '/v1/:ownerId/webhooks/:webhookId',
        '/v1/:ownerId/tus',
        '/v1/:ownerId/tus/:contentId',
        '/v1/:ownerId/resumable',
        '/v1/:ownerId/resumable/:contentId',
        '/auth/v5.x/authenticate-by-cert',
        '/auth/v5.x/approve-cert',
        '/sessions/v5.x/sessions/refresh',
        '/healthz',
        '/readyz',
        '/metrics',
        '/docs',
        '/openapi.yaml',
        '/openapi.json',
      ]).toContain(route);
  });

  it('ran at least 300 cases and left the fixtures byte for byte as they were', async () => {
    expect(cases).toBeGreaterThanOrEqual(300);
    const ready = await call(contentsUrl(owner, readyId), { token });
    expect(ready.status).toBe(200);
    expect(ready.body.equals(readyData)).toBe(true);
    const status = await call(contentsUrl(owner, uploadingId), { method: 'HEAD', token });
    expect(status.headers.get('x-upload-state')).toBe('uploading');
    expect(status.headers.get('x-received-ranges')).toBe('0-99');
    expect(
      (await putPart(owner, uploadingId, token, uploadingData.subarray(100, 300), 'bytes 100-299/300')).status,
    ).toBe(201);
    const done = await call(contentsUrl(owner, uploadingId), { token });
    expect(done.body.equals(uploadingData)).toBe(true);
  });
});
