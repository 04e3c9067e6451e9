// Traces across the services: a stack of its own exports its spans (OTLP/HTTP JSON) to a receiver
// in this test. One upload of three parts sent out of order is one trace per request, gateway →
// content-service → S3, each span's parent in the same trace; a refresh is gateway →
// session-service; the webhook delivery of the completion carries the completion's trace; log
// lines name their span; and no credential is in any exported span.
import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { DevKeys } from '@cp/credentials';
import { call, P, type Answer } from './support/http';
import { OtlpReceiver, SPAN_KIND, type ReceivedSpan } from './support/otlpReceiver';
import { decryptEncryptedKey, TestPki } from './support/pki';
import { ROOT } from './support/signin';
import { testStack } from './support/stack';
import { WebhookReceiver } from './support/webhookReceiver';

// eslint-disable-next-line @typescript-eslint/no-require-imports -- the plain-JS stack launcher
const { startStack } = require('../tools/devstack/stack') as {
  startStack: (opts: Record<string, unknown>) => Promise<{
    gatewayUrl: string;
    authDatabase: string;
    backing: Record<string, string>;
    keysDir: string;
    internalSecrets: Record<string, string>;
    services: { name: string; logFile: string }[];
    stop: () => Promise<void>;
  }>;
};
const run = promisify(execFile);

describe('traces across the services', () => {
  const receiver = new OtlpReceiver();
  const hooks = new WebhookReceiver();
  const logDir = mkdtempSync(join(tmpdir(), 'cp-traces-'));
  const secrets = new Map<string, string>(); // value -> what it is
  let stack: Awaited<ReturnType<typeof startStack>>;
  let hookUrl = '';

  beforeAll(async () => {
    const endpoint = await receiver.start();
    stack = await startStack({
      prefix: `traces${Date.now().toString(36)}`,
      logDir,
      keysDir: testStack().keysDir,
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OTEL_BSP_SCHEDULE_DELAY: '100' },
    });
    for (const [caller, value] of Object.entries(stack.internalSecrets))
      secrets.set(value, `internal secret ${caller}`);
    secrets.set(stack.backing.S3_SECRET_ACCESS_KEY!, 'S3 secret key');
    secrets.set('X-Amz-Signature', 'a presigned URL');
    secrets.set('X-Amz-Credential', 'a presigned URL');
  });
  afterAll(async () => {
    await stack?.stop();
    if (hookUrl) await hooks.stop();
    await receiver.stop();
  });

  /** The trace of one request: the one whose gateway SERVER span has its request id, once every span's parent has come. */
  const traceOf = async (res: Answer, expect: (spans: ReceivedSpan[]) => boolean): Promise<ReceivedSpan[]> => {
    const reqId = res.headers.get('x-request-id')!;
    let traceId = '';
    await receiver
      .until((spans) => {
        const root = spans.find(
          (s) => s.service === 'gateway' && s.kind === SPAN_KIND.server && s.attributes['cp.request_id'] === reqId,
        );
        traceId = root?.traceId ?? '';
        if (!root) return false;
        // Spans come in batches, a parent often after its children: wait for every parent named.
        const trace = receiver.trace(traceId);
        const ids = new Set(trace.map((s) => s.spanId));
        return expect(trace) && trace.every((s) => s.parentSpanId === null || ids.has(s.parentSpanId));
      })
      .catch((error: Error) => {
        const seen = receiver.trace(traceId).map((s) => `${s.service}: ${s.name} ${JSON.stringify(s.attributes)}`);
        throw new Error(`${error.message}; the trace of ${reqId} (${traceId || 'none'}):\n${seen.join('\n')}`);
      });
    return receiver.trace(traceId);
  };

  /** One root (the gateway's SERVER span); every other span's parent is a span of the same trace. */
  const expectWellLinked = (spans: ReceivedSpan[]): void => {
    const ids = new Set(spans.map((s) => s.spanId));
    const roots = spans.filter((s) => s.parentSpanId === null);
    expect(roots.map((r) => `${r.service} ${r.kind}`)).toEqual([`gateway ${SPAN_KIND.server}`]);
    expect(spans.filter((s) => s.parentSpanId !== null && !ids.has(s.parentSpanId))).toEqual([]);
  };
  const parentOf = (spans: ReceivedSpan[], span: ReceivedSpan) => spans.find((s) => s.spanId === span.parentSpanId);
  /** The chain of services from the root to `span`, each service once. */
  const path = (spans: ReceivedSpan[], span: ReceivedSpan): string[] => {
    const chain: string[] = [];
    for (let s: ReceivedSpan | undefined = span; s; s = parentOf(spans, s))
      if (chain[0] !== s.service) chain.unshift(s.service);
    return chain;
  };
  /** gateway SERVER → gateway CLIENT → `service` SERVER, parent by parent. */
  const expectHop = (spans: ReceivedSpan[], service: string): ReceivedSpan => {
    const server = spans.find((s) => s.service === service && s.kind === SPAN_KIND.server)!;
    expect(server).toBeDefined();
    const proxy = parentOf(spans, server)!;
    expect({ service: proxy.service, kind: proxy.kind }).toEqual({ service: 'gateway', kind: SPAN_KIND.client });
    const root = parentOf(spans, proxy)!;
    expect({ service: root.service, kind: root.kind, parent: root.parentSpanId }).toEqual({
      service: 'gateway',
      kind: SPAN_KIND.server,
      parent: null,
    });
    return server;
  };

  it('traces an upload of three parts sent out of order, and its webhook delivery, one trace per request', async () => {
    const gw = stack.gatewayUrl;
    const owner = randomUUID();
    const token = await new DevKeys(stack.keysDir).mint({ owners: [owner] });
    secrets.set(token, 'bearer token');
    hookUrl = await hooks.start();
    const hook = await call(`${gw}/v1/${owner}/webhooks`, {
      method: 'POST',
      token,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ url: hookUrl, events: ['content.completed'] }),
    });
    expect(hook.status).toBe(201);
    secrets.set(hook.json().secret as string, 'webhook secret');

    // Parts 3, 1, 2 of 64 MiB + 64 MiB + 1 KiB; the first request carries a client's traceparent.
    const total = 2 * P + 1024;
    const body = randomBytes(P);
    const clientTrace = randomBytes(16).toString('hex');
    const clientSpan = randomBytes(8).toString('hex');
    const third = await call(`${gw}/v1/${owner}/contents`, {
      method: 'POST',
      token,
      body: body.subarray(0, 1024),
      headers: {
        'content-range': `bytes ${2 * P}-${total - 1}/${total}`,
        traceparent: `00-${clientTrace}-${clientSpan}-01`,
      },
    });
    expect(third.status).toBe(201);
    const id = third.json().id as string;
    const first = await call(`${gw}/v1/${owner}/contents/${id}`, {
      method: 'PUT',
      token,
      body,
      headers: { 'content-range': `bytes 0-${P - 1}/${total}` },
    });
    expect(first.status).toBe(200);
    const second = await call(`${gw}/v1/${owner}/contents/${id}`, {
      method: 'PUT',
      token,
      body,
      headers: { 'content-range': `bytes ${P}-${2 * P - 1}/${total}` },
    });
    expect(second.status).toBe(201);

    const uploadPart = (n: number) => (spans: ReceivedSpan[]) =>
      spans.some((s) => s.name === 'S3 UploadPart' && s.attributes['aws.s3.part_number'] === n);
    const traces = [
      { res: third, part: 3 },
      { res: first, part: 1 },
      { res: second, part: 2 },
    ];
    const traceIds: string[] = [];
    for (const { res, part } of traces) {
      const spans = await traceOf(res, (s) =>
        part === 2 ? uploadPart(2)(s) && s.some((x) => x.name === 'S3 CompleteMultipartUpload') : uploadPart(part)(s),
      );
      expectWellLinked(spans);
      const service = expectHop(spans, 'content-service');
      expect(service.name).toMatch(/^(POST|PUT) /);
      const s3 = spans.find((s) => s.name === 'S3 UploadPart')!;
      expect(s3).toMatchObject({ service: 'content-service', kind: SPAN_KIND.client });
      expect(s3.attributes).toMatchObject({ 'aws.s3.part_number': part, 'cp.s3.bytes_sent': part === 3 ? 1024 : P });
      expect(path(spans, s3)).toEqual(['gateway', 'content-service']);
      // The upload's stages, each a span of the content-service under its request.
      const stages = spans.filter((s) => s.name.startsWith('upload ')).map((s) => s.name);
      expect(stages).toEqual(expect.arrayContaining(['upload admission', 'upload part', 'upload commit']));
      expect(spans.some((s) => s.name.startsWith('redis ') && s.service === 'content-service')).toBe(true);
      traceIds.push(spans[0]!.traceId);
    }
    expect(new Set(traceIds).size).toBe(3);
    // The gateway does not continue a client's trace by default: a new one, linked to the client's.
    expect(traceIds[0]).not.toBe(clientTrace);
    const gatewayRoot = receiver.trace(traceIds[0]!).find((s) => s.parentSpanId === null)!;
    expect(gatewayRoot.links).toEqual([{ traceId: clientTrace, spanId: clientSpan }]);

    // The completing request completes the multipart upload in S3 under its own span.
    const completion = receiver.trace(traceIds[2]!);
    expect(completion.some((s) => s.name === 'upload complete')).toBe(true);
    const complete = completion.find((s) => s.name === 'S3 CompleteMultipartUpload')!;
    expect(path(completion, complete)).toEqual(['gateway', 'content-service']);

    // The completion's webhook delivery continues the completion's trace.
    await hooks.until(() => hooks.received.length >= 1);
    const delivered = hooks.received[0]!;
    secrets.set(String(delivered.headers['webhook-signature']), 'webhook signature');
    const traceparent = String(delivered.headers.traceparent);
    expect(traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    expect(traceparent.split('-')[1]).toBe(traceIds[2]);
    await receiver.until((spans) => spans.some((s) => s.name === 'webhook delivery'));
    const delivery = receiver.spans.find((s) => s.name === 'webhook delivery')!;
    expect({ trace: delivery.traceId, span: delivery.spanId, kind: delivery.kind }).toEqual({
      trace: traceIds[2],
      span: traceparent.split('-')[2],
      kind: SPAN_KIND.client,
    });

    // The content-service's log lines of the completing request name its trace and spans.
    const log = stack.services.find((s) => s.name === 'content-service')!.logFile;
    const lines = readFileSync(log, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { trace_id?: string; span_id?: string; reqId?: string });
    const ofCompletion = lines.filter((l) => l.trace_id === traceIds[2]);
    expect(ofCompletion.length).toBeGreaterThan(0);
    expect(ofCompletion.some((l) => l.reqId === second.headers.get('x-request-id'))).toBe(true);
    const spanIds = new Set(completion.map((s) => s.spanId));
    for (const l of ofCompletion) expect(spanIds.has(l.span_id!)).toBe(true);
  });

  it('traces a sign-in from the gateway through the auth-service to the session-service, and a refresh that calls no other service', async () => {
    const gw = stack.gatewayUrl;
    const admin = async (...args: string[]): Promise<string> =>
      (
        await run(process.execPath, [join(ROOT, 'services', 'auth-service', 'dist', 'admin', 'cli.js'), ...args], {
          env: { ...process.env, MONGODB_URL: stack.backing.MONGODB_URL, MONGODB_DATABASE: stack.authDatabase },
        })
      ).stdout;
    const pki = new TestPki();
    const root = pki.root('Traces Root CA');
    const user = pki.issue('traces-user', root);
    await admin('trust', 'add', '--cert', root.certPath);
    const owner = randomUUID();
    await admin('user', 'add', '--user', randomUUID(), '--owner', owner, '--cert', user.certPath);
    const apiKey = (await admin('apikey', 'create', '--label', 'traces')).trim();
    secrets.set(apiKey, 'api key');

    const challenge = await call(`${gw}/auth/v5.13/authenticate-by-cert?apiKey=${encodeURIComponent(apiKey)}`, {
      method: 'POST',
      body: user.pem,
    });
    expect(challenge.status).toBe(200);
    const { EncryptedKey, Link } = challenge.json() as { EncryptedKey: string; Link: { Href: string } };
    const approved = await call(`${Link.Href}&apiKey=${encodeURIComponent(apiKey)}`, {
      method: 'POST',
      body: decryptEncryptedKey(EncryptedKey, user),
    });
    expect(approved.status).toBe(200);
    const pair = approved.json() as { Sid: string; RefreshToken: string };
    secrets.set(pair.Sid, 'sid');
    secrets.set(pair.RefreshToken, 'refresh token');
    // The approve-cert: gateway → auth-service → session-service (the session is made there).
    const approval = await traceOf(approved, (s) => s.some((x) => x.service === 'session-service'));
    expectWellLinked(approval);
    expectHop(approval, 'auth-service');
    const made = approval.find((s) => s.service === 'session-service' && s.kind === SPAN_KIND.server)!;
    expect(path(approval, made)).toEqual(['gateway', 'auth-service', 'session-service']);

    // A sid in use on /v1 (cookie), then the refresh with every credential in its headers.
    const used = await call(`${gw}/v1/${owner}/contents`, {
      method: 'POST',
      body: 'by sid',
      headers: { cookie: `auth.sid=${pair.Sid}` },
    });
    expect(used.status).toBe(201);
    const refreshed = await call(`${gw}/sessions/v5.13/sessions/refresh`, {
      method: 'POST',
      headers: {
        authorization: `auth.sid ${pair.Sid}`,
        'x-refresh-token': pair.RefreshToken,
        'x-kontur-apikey': apiKey,
      },
    });
    expect(refreshed.status).toBe(200);
    const next = refreshed.json() as { Sid: string; RefreshToken: string };
    secrets.set(next.Sid, 'refreshed sid');
    secrets.set(next.RefreshToken, 'refreshed refresh token');
    // The registration is read from the auth-service's database by the session-service itself.
    const readsRegistry = (x: ReceivedSpan) =>
      x.service === 'session-service' &&
      x.attributes['db.namespace'] === stack.authDatabase &&
      x.attributes['db.collection.name'] === 'users';
    const spans = await traceOf(refreshed, (s) => s.some(readsRegistry));
    expectWellLinked(spans);
    const session = expectHop(spans, 'session-service');
    expect(session.name).toMatch(/^POST \/sessions/);
    const mongo = spans.filter((s) => s.service === 'session-service' && s.name.startsWith('mongodb '));
    expect(mongo.length).toBeGreaterThan(0);
    for (const m of mongo) expect(path(spans, m)).toEqual(['gateway', 'session-service']);
    // No other service takes part in a refresh.
    expect([...new Set(spans.map((s) => s.service))].sort()).toEqual(['gateway', 'session-service']);
    // A query-string refresh too: its credentials never reach a span either.
    const q = new URLSearchParams({ 'auth.sid': next.Sid, 'refresh-token': next.RefreshToken, 'api-key': apiKey });
    const byQuery = await call(`${gw}/sessions/v5.13/sessions/refresh?${q}`, { method: 'POST' });
    expect(byQuery.status).toBe(200);
    secrets.set(byQuery.json().Sid as string, 'sid (query refresh)');
    secrets.set(byQuery.json().RefreshToken as string, 'refresh token (query refresh)');
    await traceOf(byQuery, (s) => s.some((x) => x.service === 'session-service'));
  });

  it('exports no credential in any span', async () => {
    // A presigned URL (direct transfer is on in the local stack): made, never a span of its own.
    const gw = stack.gatewayUrl;
    const owner = randomUUID();
    const token = await new DevKeys(stack.keysDir).mint({ owners: [owner] });
    secrets.set(token, 'bearer token (direct)');
    const open = await call(`${gw}/v1/${owner}/contents`, {
      method: 'POST',
      body: 'head',
      headers: { 'content-range': `bytes 0-3/${P + 10}` },
      token,
    });
    expect(open.status).toBe(201);
    const parts = await call(`${gw}/v1/${owner}/contents/${open.json().id}/direct-parts`, {
      method: 'POST',
      body: JSON.stringify({ parts: [{ part: 2 }] }),
      headers: { 'content-type': 'application/json' },
      token,
    });
    expect(parts.status).toBe(200);
    const url = new URL((parts.json() as { parts: { url: string }[] }).parts[0]!.url);
    secrets.set(url.searchParams.get('X-Amz-Signature')!, 'presigned URL signature');
    await traceOf(parts, (s) => s.some((x) => x.service === 'content-service'));
    await new Promise((r) => setTimeout(r, 500)); // the last batches

    expect(secrets.size).toBeGreaterThanOrEqual(12);
    const exported = receiver.bodies.join('\n');
    const hits = [...secrets].filter(([value]) => exported.includes(value)).map(([, what]) => what);
    console.log(
      `searched ${receiver.spans.length} spans (${exported.length} bytes) for ${secrets.size} credentials: ${hits.length} hits`,
    );
    expect(hits).toEqual([]);
    // The logs were not the place the search looked: they exist and hold the same requests.
    expect(readdirSync(logDir).length).toBeGreaterThanOrEqual(4);
  });
});
