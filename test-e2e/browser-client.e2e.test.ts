// The client library's browser bundle (libs/client dist/browser/content-client.js, built by
// `pnpm run build`) in headless Chromium, from a page on another origin than the API's: uploads of
// Files in parallel parts with their SHA-256 taken by WebCrypto, progress, an upload aborted after
// its first part and resumed, downloads whole (checked against Repr-Digest) and by range, and the
// bytes read back through /v1 by Node; and 200 MiB through a connection cut mid-part. Every call
// is a real cross-origin one (CORS at the gateway).
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { describeInChromium, launchChromium } from './support/chromium';
import { testStack, tokenFor } from './support/stack';
import { CuttingProxy } from './support/cuttingProxy';
import { contentsUrl, newOwner, P } from './support/http';

const BUNDLE = join(__dirname, '..', 'libs', 'client', 'dist', 'browser', 'content-client.js');

/** The page: the bundle imported as an ES module, and a list the runs write their results into. */
const PAGE = `<!doctype html>
<html><head><meta charset="utf-8"><title>content-client in the browser</title>
<style>body{font:14px system-ui;margin:2em} li{margin:.3em 0} code{background:#eee;padding:0 .3em}</style>
<script type="module">
import * as client from '/content-client.js';
window.contentClient = client;
const list = document.querySelector('#results');
window.show = (text) => { const li = document.createElement('li'); li.textContent = text; list.append(li); };
/** A File of n pseudo-random bytes (getRandomValues takes at most 64 KiB at a time). */
window.randomFile = (name, n) => {
  const chunks = [];
  for (let at = 0; at < n; at += 65536) chunks.push(crypto.getRandomValues(new Uint8Array(Math.min(65536, n - at))));
  return new File(chunks, name, { type: 'application/octet-stream' });
};
window.hex = async (blob) =>
  [...new Uint8Array(await crypto.subtle.digest('SHA-256', await blob.arrayBuffer()))]
    .map((b) => b.toString(16).padStart(2, '0')).join('');
document.querySelector('#state').textContent = 'ready';
</script></head>
<body><h1>content-client (browser bundle)</h1><p id="state">loading</p><ol id="results"></ol></body></html>`;

/** What the page puts on `window` (see PAGE). */
interface PageGlobals {
  contentClient: typeof import('../libs/client/src/browser');
  show(text: string): void;
  randomFile(name: string, size: number): File;
  hex(blob: Blob): Promise<string>;
}

interface Uploaded {
  name: string;
  id: string;
  size: number;
  sha256: string;
  ms: number;
  progressCalls: number;
  lastProgress: number;
}

describeInChromium('browser-client.e2e')('the client library’s browser bundle in headless Chromium', () => {
  const { gatewayUrl, browserOrigins, logDir } = testStack();
  const owner = newOwner();
  let token: string;
  let pages: Server;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    token = await tokenFor([owner]);
    const bundle = readFileSync(BUNDLE);
    pages = createServer((req, res) => {
      if (req.url === '/') res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE);
      else if (req.url === '/content-client.js')
        res.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' }).end(bundle);
      else res.writeHead(404).end();
    });
    const origin = new URL(browserOrigins.client);
    await new Promise<void>((resolve) => pages.listen(Number(origin.port), '127.0.0.1', resolve));
    browser = await launchChromium(browserOrigins.client);
    page = await browser.newPage({ viewport: { width: 1000, height: 700 } });
    page.on('pageerror', (error) => process.stderr.write(`browser-client.e2e: page error: ${error.message}\n`));
    await page.goto(`${browserOrigins.client}/`);
    await page.waitForFunction(() => document.querySelector('#state')?.textContent === 'ready', null, {
      timeout: 10_000,
    });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => pages?.close(resolve));
  });

  /** Reads a content back through /v1 in Node: its length, SHA-256 and Repr-Digest. */
  async function readBack(id: string) {
    const res = await fetch(contentsUrl(owner, id), { headers: { authorization: `Bearer ${token}` } });
    expect(res.status).toBe(200);
    const hash = createHash('sha256');
    let size = 0;
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      hash.update(chunk);
      size += chunk.length;
    }
    return { size, sha256: hash.digest('hex'), reprDigest: res.headers.get('repr-digest') };
  }

  it('uploads Files of 0 B, 1 B, 10 KiB and 65 MiB from another origin, with progress, byte-identical through /v1', async () => {
    const sizes = [0, 1, 10 * 1024, P + 1024 * 1024];
    const uploaded = await page.evaluate(
      async ({ baseUrl, token, owner, sizes }) => {
        const { BrowserContentClient } = (window as unknown as PageGlobals).contentClient;
        const api = new BrowserContentClient({ baseUrl, token });
        const out = [];
        for (const size of sizes) {
          const file = (window as unknown as PageGlobals).randomFile(`file-${size}.bin`, size);
          let progressCalls = 0;
          let lastProgress = -1;
          const started = performance.now();
          const id = await api.upload(file, {
            owner,
            concurrency: 4,
            onProgress: (p: { done: number }) => {
              progressCalls++;
              lastProgress = p.done;
            },
          });
          const ms = Math.round(performance.now() - started);
          (window as unknown as PageGlobals).show(`${file.name}: ${size} bytes uploaded in ${ms} ms as ${id}`);
          out.push({
            name: file.name,
            id,
            size,
            sha256: await (window as unknown as PageGlobals).hex(file),
            ms,
            progressCalls,
            lastProgress,
          });
        }
        return out;
      },
      { baseUrl: gatewayUrl, token, owner, sizes },
    );
    for (const u of uploaded as Uploaded[]) {
      process.stdout.write(
        `browser-client.e2e: ${u.name}: ${u.ms} ms in the page, ${u.progressCalls} progress calls\n`,
      );
      const back = await readBack(u.id);
      expect(back).toMatchObject({ size: u.size, sha256: u.sha256 });
      expect(back.reprDigest).toMatch(/sha-256=:|crc64nvme=:/);
      if (u.size > 0) expect(u.lastProgress).toBe(u.size);
    }
    // The 65 MiB file went in two parts, each reporting its bytes as they went.
    expect((uploaded as Uploaded[])[3]!.progressCalls).toBeGreaterThanOrEqual(2);
  }, 120_000);

  it('uploads 200 MiB through a connection cut mid-part, the part sent again, byte-identical through /v1', async () => {
    // The PUT of the second part is cut after 16 MiB of its body, four times: Chromium sends such a
    // request again by itself when the connection was a kept one, else the client does (a
    // TransportError, retried up to 5 times), so the part goes through on the fifth try at most.
    const secondPart = (r: { method: string; headers: Record<string, string> }) =>
      r.method === 'PUT' && r.headers['content-range']?.startsWith(`bytes ${P}-`) === true;
    const proxy = await new CuttingProxy(Number(new URL(gatewayUrl).port), {
      when: secondPart,
      afterBytes: 16 * 1024 * 1024,
      most: 4,
    }).start();
    try {
      const result = await page.evaluate(
        async ({ baseUrl, token, owner, size }) => {
          const { BrowserContentClient } = (window as unknown as PageGlobals).contentClient;
          const retries: string[] = [];
          // Four cuts, and a resend may meet the part still held by the request that was cut (503
          // partWriting, retried too): more than the default five retries may be needed.
          const api = new BrowserContentClient({ baseUrl, token, retries: 8, onRetry: (n) => retries.push(n.reason) });
          const file = (window as unknown as PageGlobals).randomFile('cut.bin', size);
          const started = performance.now();
          const id = await api.upload(file, { owner, concurrency: 2 });
          const ms = Math.round(performance.now() - started);
          (window as unknown as PageGlobals).show(
            `cut.bin: ${size} bytes in ${ms} ms through ${retries.length} retries`,
          );
          return { id, ms, retries, sha256: await (window as unknown as PageGlobals).hex(file) };
        },
        { baseUrl: proxy.url, token, owner, size: 200 * 1024 * 1024 },
      );
      process.stdout.write(
        `browser-client.e2e: 200 MiB in ${result.ms} ms; ${proxy.cuts.length} cuts, the client retried ${result.retries.length} time(s): ${result.retries.join('; ')}\n`,
      );
      expect(proxy.cuts.length).toBe(4);
      // Sent again after each cut, whoever sent it (Chromium or the client), and through the fifth
      // time; and at most once more for each 503 of a resend that came while a cut request still held
      // the part (such a request may also have been cut as its body went on).
      const partWriting = result.retries.filter((r) => /being written by another request/.test(r)).length;
      const sent = proxy.requests.filter(secondPart).length;
      expect(sent).toBeGreaterThanOrEqual(5);
      expect(sent).toBeLessThanOrEqual(5 + partWriting);
      expect(result.retries.length - partWriting).toBeLessThanOrEqual(4);
      expect(await readBack(result.id)).toMatchObject({ size: 200 * 1024 * 1024, sha256: result.sha256 });
    } finally {
      await proxy.stop();
    }
    // 120 s did not suffice once, on two cores shared with a Go build and a benchmark; the time is printed.
  }, 300_000);

  it('resumes an upload aborted after its first part, sending only the part it lacked', async () => {
    const result = await page.evaluate(
      async ({ baseUrl, token, owner, size }) => {
        const { BrowserContentClient } = (window as unknown as PageGlobals).contentClient;
        const api = new BrowserContentClient({ baseUrl, token });
        const file = (window as unknown as PageGlobals).randomFile('resumed.bin', size);
        const stop = new AbortController();
        let id: string | null = null;
        let aborted = '';
        try {
          // The first part creates the content; the page then goes away before any other is sent.
          await api.upload(file, {
            owner,
            signal: stop.signal,
            onContentId: (created: string) => {
              id = created;
              stop.abort(new Error('the page was closed'));
            },
          });
        } catch (error) {
          aborted = String(error);
        }
        const before = await api.status(owner, id!);
        let resumedBytes = 0;
        const again = await api.upload(file, {
          owner,
          resume: id!,
          onProgress: (p: { done: number }) => (resumedBytes = p.done),
        });
        (window as unknown as PageGlobals).show(`resumed.bin: aborted (${aborted}), resumed, ready as ${again}`);
        return { id, again, aborted, before, resumedBytes, sha256: await (window as unknown as PageGlobals).hex(file) };
      },
      { baseUrl: gatewayUrl, token, owner, size: P + 10 * 1024 },
    );
    expect(result.aborted).toContain('the page was closed');
    expect(result.before).toMatchObject({ state: 'uploading', received: [{ start: 0, end: P - 1 }] });
    expect(result.again).toBe(result.id);
    expect(result.resumedBytes).toBe(P + 10 * 1024);
    expect(await readBack(result.id!)).toMatchObject({ size: P + 10 * 1024, sha256: result.sha256 });
  }, 120_000);

  it('downloads a content whole, checked against its Repr-Digest, and by range', async () => {
    const result = await page.evaluate(
      async ({ baseUrl, token, owner, size, P }) => {
        const { BrowserContentClient } = (window as unknown as PageGlobals).contentClient;
        const api = new BrowserContentClient({ baseUrl, token });
        const file = (window as unknown as PageGlobals).randomFile('downloaded.bin', size);
        const id = await api.upload(file, { owner });
        const whole = await api.download(owner, id);
        const range = await api.download(owner, id, { range: { start: P - 100, end: P + 99 } });
        const hex = (window as unknown as PageGlobals).hex;
        const sameRange = (await hex(range.body)) === (await hex(file.slice(P - 100, P + 100)));
        (window as unknown as PageGlobals).show(
          `downloaded.bin: whole (checked ${whole.checked.join(', ')}) and 200 bytes across parts`,
        );
        return {
          wholeSame: (await hex(whole.body)) === (await hex(file)),
          checked: whole.checked,
          total: whole.total,
          rangeSize: range.body.size,
          rangeTotal: range.total,
          sameRange,
        };
      },
      { baseUrl: gatewayUrl, token, owner, size: P + 4096, P },
    );
    expect(result).toEqual({
      wholeSame: true,
      checked: expect.arrayContaining(['crc64nvme']),
      total: P + 4096,
      rangeSize: 200,
      rangeTotal: P + 4096,
      sameRange: true,
    });
  }, 120_000);

  it('answers an error of the API as an ApiError with its code, from another origin', async () => {
    const error = await page.evaluate(
      async ({ baseUrl, owner }) => {
        const { BrowserContentClient } = (window as unknown as PageGlobals).contentClient;
        const api = new BrowserContentClient({ baseUrl, token: 'not-a-token', retries: 0 });
        try {
          await api.status(owner, '00000000-0000-4000-8000-000000000000');
          return null;
        } catch (e) {
          const { name, status, code } = e as { name: string; status: number; code: string };
          return { name, status, code };
        }
      },
      { baseUrl: gatewayUrl, owner },
    );
    expect(error).toMatchObject({ name: 'ApiError', status: 401 });
    const shot = join(logDir, 'browser-client.png');
    mkdirSync(logDir, { recursive: true });
    await page.screenshot({ path: shot, fullPage: true });
    expect(statSync(shot).size).toBeGreaterThan(1000);
    process.stdout.write(`browser-client.e2e: screenshot ${shot}\n`);
  }, 30_000);
});
