import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ApiError,
  ContentClient,
  RetriesExhaustedError,
  RetryPolicy,
  TransportError,
  parseRetryAfter,
  retryReason,
  type ContentClientOptions,
  type RetryNotice,
} from '../src';
import { parseDuration } from '../src/cli/duration';
import { progressView, waitingText } from '../src/cli/progress';
import { FakeContentApi } from './support/FakeContentApi';

const PART = 64 * 1024;
const OWNER = '00000000-0000-4000-8000-000000000001';
const unavailable = (headers: Record<string, string> = {}) => ({
  status: 503,
  headers,
  body: {
    id: 'urn:error:contents:serviceUnavailable',
    'status-code': 503,
    message: 'restarting',
    'track-id': 'tr-503',
  },
});

describe('retries within a time budget', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-client-budget-'));
  let api: FakeContentApi;
  let url: string;
  let notices: RetryNotice[];
  const clients: ContentClient[] = [];
  const client = (options: Partial<ContentClientOptions> = {}) => {
    const c = new ContentClient({
      baseUrl: url,
      credentials: { kind: 'bearer', token: 'ok' },
      partSize: PART,
      onRetry: (n) => notices.push(n),
      ...options,
    });
    clients.push(c);
    return c;
  };
  const file = (bytes: number) => {
    const path = join(dir, `f-${bytes}-${Math.random()}`);
    const data = randomBytes(bytes);
    writeFileSync(path, data);
    return { path, data };
  };
  const putsOf = (range: string) => api.seen.filter((s) => s.method === 'PUT' && s.range === range);

  beforeEach(async () => {
    notices = [];
    api = new FakeContentApi();
    url = await api.start();
  });
  afterEach(async () => {
    clients.splice(0).forEach((c) => c.close());
    await api.stop();
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('waits as long as Retry-After says in seconds after a 503, then the part goes through', async () => {
    const { path, data } = file(3 * PART);
    const second = `bytes ${PART}-${2 * PART - 1}/${data.length}`;
    api.intercept = (s, n) =>
      s.method === 'PUT' && s.range === second && n <= 2 ? unavailable({ 'retry-after': '1' }) : undefined;
    const id = await client().uploadFile(path, { owner: OWNER, concurrency: 1 });
    expect(api.bytesOf(id).equals(data)).toBe(true);
    const tries = putsOf(second);
    expect(tries).toHaveLength(3);
    expect(tries[1]!.at - tries[0]!.at).toBeGreaterThanOrEqual(990);
    expect(tries[2]!.at - tries[1]!.at).toBeGreaterThanOrEqual(990);
    expect(notices.map((n) => [n.reason, n.status, n.delayMs >= 1000, n.attempt])).toEqual([
      ['service unavailable (503)', 503, true, 1],
      ['service unavailable (503)', 503, true, 2],
    ]);
  });

  it("waits until the HTTP date of Retry-After, measured against the answer's own Date", async () => {
    const { path, data } = file(2 * PART);
    const second = `bytes ${PART}-${2 * PART - 1}/${data.length}`;
    // The server's clock is an hour behind: only the difference of its two dates counts.
    api.intercept = (s, n) => {
      if (s.method !== 'PUT' || n > 1) return undefined;
      const serverNow = Math.floor(Date.now() / 1000) * 1000 - 3_600_000;
      return unavailable({
        date: new Date(serverNow).toUTCString(),
        'retry-after': new Date(serverNow + 2000).toUTCString(),
      });
    };
    const id = await client().uploadFile(path, { owner: OWNER });
    expect(api.bytesOf(id).equals(data)).toBe(true);
    const tries = putsOf(second);
    expect(tries).toHaveLength(2);
    expect(tries[1]!.at - tries[0]!.at).toBeGreaterThanOrEqual(1990);
    expect(tries[1]!.at - tries[0]!.at).toBeLessThan(3500);
    expect(notices).toHaveLength(1);
    expect(notices[0]!.delayMs).toBe(2000);
  });

  it('reads Retry-After as seconds or an HTTP date, and ignores what is neither', () => {
    const now = Date.parse('Mon, 23 Nov 2026 16:00:00 GMT');
    expect(parseRetryAfter({ 'retry-after': '7' }, now)).toBe(7000);
    expect(parseRetryAfter({ 'retry-after': 'Mon, 23 Nov 2026 16:00:30 GMT' }, now)).toBe(30_000);
    expect(
      parseRetryAfter({ 'retry-after': 'Mon, 23 Nov 2026 16:00:30 GMT', date: 'Mon, 23 Nov 2026 16:00:20 GMT' }, now),
    ).toBe(10_000);
    expect(parseRetryAfter({ 'retry-after': 'Mon, 23 Nov 2026 15:00:00 GMT' }, now)).toBe(0);
    expect(parseRetryAfter({ 'retry-after': 'soon' }, now)).toBeNull();
    expect(parseRetryAfter({}, now)).toBeNull();
  });

  it('caps a long Retry-After at 60 s', () => {
    const c = client();
    // The policy is internal; its delay for an answer asking for an hour:
    const policy = (c as unknown as { api: { retries: { delayMs: (n: number, e: unknown) => number } } }).api.retries;
    expect(policy.delayMs(1, new ApiError(503, 'x', 'x', null, 3_600_000))).toBe(60_000);
  });

  it('retries 429 (too many requests) and 408, and the content is whole', async () => {
    const { path, data } = file(3 * PART);
    api.intercept = (s, n) => {
      if (s.method === 'PUT' && s.range?.startsWith(`bytes ${PART}-`) && n === 1)
        return { status: 429, headers: { 'retry-after': '0' } };
      if (s.method === 'PUT' && s.range?.startsWith(`bytes ${2 * PART}-`) && n === 1) return { status: 408 };
      return undefined;
    };
    const id = await client().uploadFile(path, { owner: OWNER, concurrency: 2 });
    expect(api.bytesOf(id).equals(data)).toBe(true);
    expect(notices.map((n) => n.reason).sort()).toEqual(['request timeout (408)', 'too many requests (429)']);
  });

  it('retries 502 and 504 of a gateway', async () => {
    const { path, data } = file(PART);
    api.intercept = (s, n) => (s.method === 'POST' && n <= 2 ? { status: n === 1 ? 502 : 504 } : undefined);
    const id = await client().uploadFile(path, { owner: OWNER });
    expect(api.bytesOf(id).equals(data)).toBe(true);
    expect(notices.map((n) => n.reason)).toEqual(['bad gateway (502)', 'gateway timeout (504)']);
  });

  it('keeps trying while the connection is refused, and goes on once the service listens again', async () => {
    const { path, data } = file(2 * PART);
    const port = Number(new URL(url).port);
    await api.stop();
    const c = client();
    const upload = c.uploadFile(path, { owner: OWNER });
    await new Promise((r) => setTimeout(r, 1500));
    expect(notices.length).toBeGreaterThan(0);
    const backAt = Date.now();
    await api.start(port);
    const id = await upload;
    const recoveredAt = Date.now();
    expect(api.bytesOf(id).equals(data)).toBe(true);
    expect(new Set(notices.map((n) => n.reason))).toEqual(new Set(['connection refused']));
    expect(notices.every((n) => n.status === null)).toBe(true);
    // The next try comes when the client said it would (a random wait below 0.5 s · 2^n, at most
    // 10 s), and it goes through: done within a moment of the last announced retry.
    const announced = Math.max(...notices.map((n) => n.retryAt));
    console.log(
      `recovered ${recoveredAt - backAt} ms after the service listened, ${recoveredAt - announced} ms after the announced retry`,
    );
    expect(announced - backAt).toBeLessThan(10_000);
    expect(recoveredAt - announced).toBeLessThan(3000);
  });

  it('gives up when the budget is spent, saying how long it tried and why', async () => {
    const { path } = file(2 * PART);
    api.intercept = (s) => (s.method === 'PUT' ? unavailable({ 'retry-after': '0' }) : undefined);
    const started = Date.now();
    const error = await client({ retryForMs: 1500 })
      .uploadFile(path, { owner: OWNER })
      .catch((e: unknown) => e);
    const took = Date.now() - started;
    expect(error).toBeInstanceOf(RetriesExhaustedError);
    const gaveUp = error as RetriesExhaustedError;
    expect(gaveUp.retriedForMs).toBeGreaterThanOrEqual(1500);
    expect(gaveUp.retriedForMs).toBeLessThan(2500);
    expect(took).toBeLessThan(3000);
    expect(gaveUp.attempts).toBe(api.count('PUT'));
    expect(gaveUp.attempts).toBeGreaterThan(2);
    expect(gaveUp.status).toBe(503);
    expect(gaveUp.trackId).toBe('tr-503');
    expect(gaveUp.cause).toBeInstanceOf(ApiError);
    expect(gaveUp.message).toMatch(
      /^gave up after retrying for 2s \(\d+ attempts\): service unavailable \(503\): restarting$/,
    );
    // The last notice's wait was cut to what was left of the budget.
    expect(notices[notices.length - 1]!.retryAt).toBeLessThanOrEqual(notices[0]!.giveUpAt);
  });

  it('with a budget of 0 does not retry at all: the answer itself is the error', async () => {
    const { path } = file(PART);
    api.intercept = () => unavailable({ 'retry-after': '0' });
    await expect(client({ retryForMs: 0 }).uploadFile(path, { owner: OWNER })).rejects.toMatchObject({
      name: 'ApiError',
      status: 503,
    });
    expect(api.count('POST')).toBe(1);
    expect(notices).toEqual([]);
  });

  it.each([400, 401, 403, 404, 409, 411, 413, 416])('fails at once on %i: no retry, no wait', async (status) => {
    const { path } = file(PART);
    api.intercept = () => ({ status, headers: { 'retry-after': '1' } });
    const started = Date.now();
    await expect(client().uploadFile(path, { owner: OWNER })).rejects.toMatchObject({ name: 'ApiError', status });
    expect(Date.now() - started).toBeLessThan(500);
    expect(api.count('POST')).toBe(1);
    expect(notices).toEqual([]);
  });

  it('gives each part its own budget: parts failing one after another, each for less than the budget, all go through', async () => {
    const { path, data } = file(4 * PART);
    const failingSince = new Map<string, number>();
    // Each PUT fails for its first 1.2 s; with one part in flight that is 3.6 s of failures in all,
    // more than the 2 s budget, but each part's own failures last less.
    api.intercept = (s) => {
      if (s.method !== 'PUT') return undefined;
      const since = failingSince.get(s.range!) ?? Date.now();
      failingSince.set(s.range!, since);
      return Date.now() - since < 1200 ? unavailable({ 'retry-after': '0' }) : undefined;
    };
    const started = Date.now();
    const id = await client({ retryForMs: 2000 }).uploadFile(path, { owner: OWNER, concurrency: 1 });
    expect(Date.now() - started).toBeGreaterThan(3600);
    expect(api.bytesOf(id).equals(data)).toBe(true);
    expect(failingSince.size).toBe(3);
  });

  it('gives up on one part that fails past its budget even though the others went through', async () => {
    const { path } = file(4 * PART);
    const third = `bytes ${2 * PART}-${3 * PART - 1}/${4 * PART}`;
    api.intercept = (s) => (s.method === 'PUT' && s.range === third ? unavailable({ 'retry-after': '0' }) : undefined);
    const error = await client({ retryForMs: 1000 })
      .uploadFile(path, { owner: OWNER, concurrency: 3 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RetriesExhaustedError);
    expect(api.count('PUT', `bytes ${PART}-${2 * PART - 1}/${4 * PART}`)).toBe(1);
    expect(api.count('PUT', `bytes ${3 * PART}-${4 * PART - 1}/${4 * PART}`)).toBe(1);
    expect(api.count('PUT', third)).toBeGreaterThan(1);
  });

  it('sends a refresh with its inputs in headers, not in the query string', async () => {
    const c = client({
      credentials: { kind: 'session', sid: api.sid, refreshToken: api.refreshToken, apiKey: 'key-1' },
    });
    await expect(c.refresh()).resolves.toEqual({ sid: 'SID-2', refreshToken: 'RT-2' });
    const sent = api.seen.find((s) => s.path === '/sessions/v5.13/sessions/refresh')!;
    expect(sent.query).toBe('');
    expect(sent.headers).toMatchObject({
      authorization: 'auth.sid SID-1',
      'x-refresh-token': 'RT-1',
      'x-kontur-apikey': 'key-1',
    });
  });

  it('retries a refresh that met a 503', async () => {
    api.intercept = (s, n) =>
      s.path.endsWith('/refresh') && n === 1 ? unavailable({ 'retry-after': '0' }) : undefined;
    const c = client({ credentials: { kind: 'session', sid: api.sid, refreshToken: api.refreshToken, apiKey: 'k' } });
    await expect(c.refresh()).resolves.toEqual({ sid: 'SID-2', refreshToken: 'RT-2' });
    expect(notices.map((n) => n.path)).toEqual(['/sessions/v5.13/sessions/refresh']);
  });
});

describe('the waiting progress line', () => {
  const notice = (over: Partial<RetryNotice> = {}): RetryNotice => ({
    reason: 'service unavailable (503)',
    status: 503,
    method: 'PUT',
    path: '/v1/x',
    attempt: 1,
    delayMs: 4000,
    retryAt: 1_000_000 + 4000,
    giveUpAt: 1_000_000 + 112_000,
    ...over,
  });
  const sink = () => {
    let text = '';
    return {
      stream: { write: (s: string) => ((text += s), true), isTTY: false } as unknown as NodeJS.WriteStream,
      text: () => text,
    };
  };

  it('says how long it waits, why, and for how much longer it keeps retrying', () => {
    expect(waitingText(notice(), 1_000_000)).toBe('waiting 4 s: service unavailable (503), retrying for 1m52s more');
    expect(
      waitingText(
        notice({ reason: 'connection refused', retryAt: 1_000_000 + 300, giveUpAt: 1_000_000 + 45_000 }),
        1_000_000,
      ),
    ).toBe('waiting 1 s: connection refused, retrying for 45s more');
  });

  it('without a terminal prints a line per wait (not one per part in flight), and one when it goes on', () => {
    const out = sink();
    const view = progressView('upload', out.stream, 'lines');
    view.update({ done: 0, total: 100 });
    const now = Date.now();
    view.waiting(notice({ retryAt: now + 4000, giveUpAt: now + 112_000 }));
    view.waiting(notice({ retryAt: now + 4000, giveUpAt: now + 112_000 }));
    view.waiting(notice({ reason: 'connection refused', retryAt: now + 1, giveUpAt: now + 112_000 }));
    const lines = out.text().trim().split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[1]).toMatch(/^upload: waiting [34] s: service unavailable \(503\), retrying for 1m5[12]s more$/);
    expect(lines[2]).toMatch(/^upload: waiting [01] s: connection refused, retrying for 1m5[12]s more$/);
    return new Promise<void>((resolve) =>
      setTimeout(() => {
        view.update({ done: 50, total: 100 });
        const after = out.text().trim().split('\n');
        expect(after[3]).toMatch(/^upload: going on after 0s of retries$/);
        expect(after[4]).toMatch(/^upload: 50% 50\/100 bytes/);
        resolve();
      }, 20),
    );
  });

  it("on a terminal keeps it on the bar's one line, in place of the ETA", async () => {
    let text = '';
    const stream = {
      write: (s: string) => ((text += s), true),
      isTTY: true,
      columns: 200,
      cursorTo: () => true,
      clearLine: () => true,
      moveCursor: () => true,
    } as unknown as NodeJS.WriteStream;
    const view = progressView('upload', stream, 'bar');
    view.update({ done: 10 * 2 ** 20, total: 40 * 2 ** 20 });
    const now = Date.now();
    view.waiting(notice({ retryAt: now + 4000, giveUpAt: now + 112_000 }));
    await new Promise((r) => setTimeout(r, 250));
    view.stop();
    expect(text).toMatch(
      /upload \[[=-]+\] 25% \| 10\.0\/40\.0 MiB \| [\d.]+ MB\/s \| waiting [34] s: service unavailable \(503\), retrying for 1m5[12]s more/,
    );
    expect(text).not.toMatch(/\n.*\n/);
  });
});

describe('--retry-for', () => {
  it('reads 30s, 5m, 1h, 2m30s, 500ms and bare seconds; refuses the rest', () => {
    expect(['30s', '5m', '1h', '2m30s', '500ms', '90', '0'].map(parseDuration)).toEqual([
      30_000, 300_000, 3_600_000, 150_000, 500, 90_000, 0,
    ]);
    expect(['', 'soon', '5 minutes', '-1s', 'm'].map(parseDuration)).toEqual([null, null, null, null, null]);
  });
});

describe('a request that must not take effect twice (once)', () => {
  const api = (status: number) => new ApiError(status, 'x', 'x', null, null);
  const net = (code: string) => new TransportError(code, { code });

  it('is retried only where the service surely did not act: 429, 503, no connection', () => {
    for (const retried of [api(429), api(503), net('ECONNREFUSED'), net('EHOSTUNREACH'), net('EAI_AGAIN')]) {
      expect(retryReason(retried, true)).not.toBeNull();
      expect(retryReason(retried)).toBe(retryReason(retried, true));
    }
    // What may come after the service acted: retried for other requests, not for this one.
    for (const final of [
      api(500),
      api(502),
      api(504),
      api(408),
      net('ECONNRESET'),
      net('ANSWER_BROKE_OFF'),
      net('EPIPE'),
    ]) {
      expect(retryReason(final)).not.toBeNull();
      expect(retryReason(final, true)).toBeNull();
    }
    expect(retryReason(api(400), true)).toBeNull();
  });

  it('runs once after a reset, and again after a 503', async () => {
    const policy = new RetryPolicy({ retryForMs: 5_000, random: () => 0 });
    let calls = 0;
    const reset = policy.run({ method: 'POST', path: '/w', once: true }, async () => {
      calls++;
      throw net('ECONNRESET');
    });
    await expect(reset).rejects.toBeInstanceOf(TransportError);
    expect(calls).toBe(1);
    calls = 0;
    const answer = await policy.run({ method: 'POST', path: '/w', once: true }, async () => {
      if (++calls === 1) throw api(503);
      return 'created';
    });
    expect([answer, calls]).toEqual(['created', 2]);
  });
});
