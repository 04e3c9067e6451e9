// Uppy (@uppy/core + @uppy/tus), the browser upload widget people put in front of tus servers, in
// Debian's headless Chromium driven by playwright-core, from a page on another origin than the API:
// files of 1 byte, 10 KiB, 65 MiB and 200 MiB at once, one connection cut mid-PATCH by a TCP proxy
// between the browser and the gateway, Uppy resuming from the offset the tus door stored; then the
// bytes read back through /v1 and their digests compared with the ones the page computed.
import { createHash } from 'node:crypto';
import { mkdirSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { Crc64Nvme } from '@aws-sdk/crc64-nvme';
import { build } from 'esbuild';
import type { Browser, Page } from 'playwright-core';
import { describeInChromium, launchChromium } from './support/chromium';
import type { TusExchange, UploadReport, UploadRequest } from './support/browser/uppyPage';
import { CuttingProxy, type ProxiedRequest } from './support/cuttingProxy';
import { testStack, tokenFor } from './support/stack';
import { contentsUrl, newOwner, P } from './support/http';

const MiB = 1024 * 1024;
const FILES = [
  { name: 'one-byte.bin', size: 1 },
  { name: 'ten-kib.bin', size: 10 * 1024 },
  { name: 'sixty-five-mib.bin', size: 65 * MiB },
  { name: 'two-hundred-mib.bin', size: 200 * MiB },
];
const BIG = FILES[3]!;
/** Of the cut PATCH's body, passed on before the cut. */
const CUT_AFTER = 16 * MiB;

/** The page and its script, on the origin the gateway lets call the API (its port was free at setup). */
async function servePage(origin: string, script: string): Promise<Server> {
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<link rel="icon" href="data:,">
<title>Uppy to the tus door</title>
<style>
  body { font: 14px system-ui, sans-serif; margin: 24px; }
  table { border-collapse: collapse; margin: 16px 0; }
  th, td { border: 1px solid #ccc; padding: 4px 10px; text-align: left; }
  td.size { text-align: right; font-variant-numeric: tabular-nums; }
  td.name { white-space: nowrap; }
  td.sha, code { font-family: monospace; }
  progress { width: 180px; }
</style>
</head>
<body>
<h1>Uppy + @uppy/tus on <span id="origin"></span></h1>
<p>tus endpoint: <code id="endpoint"></code></p>
<table id="files">
<thead><tr><th>file</th><th>bytes</th><th>SHA-256</th><th>progress</th><th>state</th></tr></thead>
<tbody></tbody>
</table>
<p id="summary">not started</p>
<script src="/uppy-page.js"></script>
</body>
</html>`;
  const server = createServer((req, res) => {
    const [type, body] =
      req.url === '/'
        ? ['text/html; charset=utf-8', html]
        : req.url === '/uppy-page.js'
          ? ['text/javascript; charset=utf-8', script]
          : ['text/plain', 'not found'];
    res.writeHead(body === 'not found' ? 404 : 200, { 'content-type': type, 'cache-control': 'no-store' });
    res.end(body);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(Number(new URL(origin).port), '127.0.0.1', resolve);
  });
  return server;
}

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not done after ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** A content downloaded through /v1, hashed as it streams (SHA-256 and S3's CRC-64/NVME). */
async function readBack(owner: string, id: string, token: string) {
  const res = await fetch(contentsUrl(owner, id), { headers: { authorization: `Bearer ${token}` } });
  const sha = createHash('sha256');
  const crc = new Crc64Nvme();
  let size = 0;
  const reader = res.body!.getReader();
  for (let read = await reader.read(); !read.done; read = await reader.read()) {
    sha.update(read.value);
    crc.update(read.value);
    size += read.value.length;
  }
  return {
    status: res.status,
    size,
    sha256: sha.digest('hex'),
    crc64nvme: Buffer.from(await crc.digest()).toString('base64'),
    reprDigest: res.headers.get('repr-digest'),
    contentType: res.headers.get('content-type'),
  };
}

/** The members of a digest field (RFC 9530), `crc64nvme=:…:, sha-256=:…:`: name to base64 value. */
const digestMembers = (field: string): Map<string, string> =>
  new Map(
    field.split(',').map((member) => {
      const [, name, value] = /^\s*([a-z0-9-]+)=:([^:]*):\s*$/.exec(member) ?? [];
      return [name ?? member, value ?? ''];
    }),
  );

/** One line per request, as tus-js-client saw it: method, Upload-Offset sent, status, Upload-Offset answered. */
const described = (e: TusExchange) =>
  `${e.method} ${e.offset ?? '-'} -> ${e.status ?? 'no answer'} ${e.answeredOffset ?? e.errorId ?? '-'}`;

describeInChromium('browser-uppy.e2e')(
  'Uppy with @uppy/tus in headless Chromium, from a page on another origin',
  () => {
    const owner = newOwner();
    let token: string;
    let browser: Browser;
    let page: Page;
    let pageServer: Server;
    let proxy: CuttingProxy;
    const pageErrors: string[] = [];
    const consoleErrors: string[] = [];

    beforeAll(async () => {
      token = await tokenFor([owner]);
      const t0 = Date.now();
      const bundle = await build({
        entryPoints: [join(__dirname, 'support', 'browser', 'uppyPage.ts')],
        bundle: true,
        platform: 'browser',
        format: 'iife',
        target: 'chrome120',
        write: false,
        logLevel: 'silent',
      });
      console.log(
        `page script bundled by esbuild in ${Date.now() - t0} ms: ${bundle.outputFiles[0]!.contents.length} bytes`,
      );
      pageServer = await servePage(testStack().browserOrigins.uppy, bundle.outputFiles[0]!.text);

      // Only the 200 MiB file has a second whole 64 MiB part: its PATCH at offset P is the one cut.
      proxy = await new CuttingProxy(Number(new URL(testStack().gatewayUrl).port), {
        when: (r) => r.method === 'PATCH' && r.headers['upload-offset'] === String(P) && r.bodyLength === P,
        afterBytes: CUT_AFTER,
      }).start();

      browser = await launchChromium(testStack().browserOrigins.uppy);
      page = await (await browser.newContext({ viewport: { width: 1100, height: 420 } })).newPage();
      page.on('pageerror', (e) => pageErrors.push(e.message));
      page.on('console', (m) => {
        if (m.type() === 'error') consoleErrors.push(m.text());
      });
      const opened = await page.goto(`${testStack().browserOrigins.uppy}/`, { waitUntil: 'load' });
      expect(opened?.status()).toBe(200);
    }, 60_000);

    afterAll(async () => {
      await browser?.close();
      await proxy?.stop();
      await new Promise((resolve) => (pageServer ? pageServer.close(resolve) : resolve(undefined)));
    });

    it('uploads 1 B, 10 KiB, 65 MiB and 200 MiB; a PATCH cut mid-body is resumed from the stored offset; the bytes read back with their digests', async () => {
      const origin = testStack().browserOrigins.uppy;
      const endpoint = `${proxy.url}/v1/${owner}/tus/`;
      expect(new URL(endpoint).origin).not.toBe(origin);
      const request: UploadRequest = {
        endpoint,
        token,
        files: FILES,
        // One PATCH per 64 MiB part of the content: each goes straight into its S3 part.
        chunkSize: P,
        retryDelays: [250, 1000, 3000],
      };
      const t0 = Date.now();
      const report: UploadReport = await withTimeout(
        page.evaluate((r) => window.uploadWithUppy(r), request),
        75_000,
        'Uppy uploading the files',
      );
      console.log(`Uppy ${report.uppyVersion}: ${FILES.length} files uploaded at once in ${Date.now() - t0} ms`);
      for (const f of report.files)
        console.log(
          `  ${f.name}: ${f.size} bytes made and hashed in ${f.preparedMs} ms, uploaded after ${f.uploadMs} ms`,
        );
      if (consoleErrors.length) console.log(`the page's console errors:\n  ${consoleErrors.join('\n  ')}`);

      expect(report.errors).toEqual([]);
      expect(pageErrors).toEqual([]);
      expect(report.files.map((f) => [f.name, f.size]).sort()).toEqual(FILES.map((f) => [f.name, f.size]).sort());
      const uploadUrl = new RegExp(`^${proxy.url}/v1/${owner}/tus/[0-9a-f-]{36}$`);
      for (const f of report.files) expect(f.uploadURL).toMatch(uploadUrl);

      // Every call went through the proxy as a cross-origin call from the page's origin, preflighted.
      expect(proxy.requests.filter((r) => r.headers.origin !== origin)).toEqual([]);
      expect(proxy.requests.filter((r) => r.method === 'OPTIONS').length).toBeGreaterThan(0);

      // The cut: mid-body of the 200 MiB file's second PATCH, on a connection of its own each time
      // Chromium resent it, until its XHR failed.
      const big = report.files.find((f) => f.name === BIG.name)!;
      const bigPath = new URL(big.uploadURL).pathname;
      const { cuts } = proxy;
      expect(cuts.length).toBeGreaterThanOrEqual(1);
      for (const c of cuts)
        expect([c.request.method, c.request.path, c.request.headers['upload-offset'], c.forwarded]).toEqual([
          'PATCH',
          bigPath,
          String(P),
          CUT_AFTER,
        ]);
      expect(new Set(cuts.map((c) => c.request.connection)).size).toBe(cuts.length);

      // What the browser sent for the file: the first part, the cut PATCH (and Chromium's own resends
      // of it), then, on a connection not cut, tus-js-client's HEAD and only the rest of the file.
      const sent = proxy.requests.filter((r) => r.path === bigPath && r.method !== 'OPTIONS');
      const line = (r: ProxiedRequest) => `${r.method} ${r.headers['upload-offset'] ?? '-'}`;
      expect(line(sent[0]!)).toBe('PATCH 0');
      expect(sent.slice(1, 1 + cuts.length)).toEqual(cuts.map((c) => c.request));
      expect(line(sent[1 + cuts.length]!)).toBe('HEAD -');
      expect(sent.slice(-3).map(line)).toEqual([`PATCH ${P}`, `PATCH ${2 * P}`, `PATCH ${3 * P}`]);
      expect(sent.slice(1 + cuts.length, -3).map(line)).toEqual(
        sent.slice(1 + cuts.length, -3).map(() => expect.stringMatching(new RegExp(`^(HEAD -|PATCH ${P})$`))),
      );
      expect(cuts.map((c) => c.request.connection)).not.toContain(sent[sent.length - 3]!.connection);

      // What tus-js-client saw: the PATCH at P failed, either cut (no answer) or, when a resend of
      // Chromium's reached the door while it still held the part for the cut request, 503
      // partWriting. Each failure was retried with a HEAD (the first part stored, nothing of the
      // cut one) and a PATCH from there; the first part was never sent again.
      const lines = report.exchanges.filter((e) => e.file === BIG.name).map(described);
      expect(lines.slice(0, 2)).toEqual(['POST - -> 201 0', `PATCH 0 -> 204 ${P}`]);
      expect(lines.slice(-3)).toEqual([
        `PATCH ${P} -> 204 ${2 * P}`,
        `PATCH ${2 * P} -> 204 ${3 * P}`,
        `PATCH ${3 * P} -> 204 ${BIG.size}`,
      ]);
      const retried = lines.slice(2, -3);
      expect(retried.length).toBeGreaterThanOrEqual(2);
      expect(retried.length % 2).toBe(0);
      expect(retried).toEqual(
        retried.map((_, i) =>
          i % 2
            ? `HEAD - -> 200 ${P}`
            : expect.stringMatching(new RegExp(`^PATCH ${P} -> (no answer -|503 urn:error:contents:partWriting)$`)),
        ),
      );
      // Uppy retried those, and nothing else in the run.
      expect(report.retries.map((r) => r.file)).toEqual(retried.filter((_, i) => i % 2 === 0).map(() => BIG.name));

      const [first, last] = [cuts[0]!, cuts[cuts.length - 1]!];
      const resumed = report.exchanges.find((e) => e.file === BIG.name && e.at > last.at && e.method === 'PATCH')!;
      console.log(
        `${BIG.name}: the PATCH at offset ${P} cut after ${CUT_AFTER / MiB} MiB of its ${P / MiB} MiB body on ` +
          `${cuts.length} connection(s) (Chromium resent it ${cuts.length - 1} time(s) by itself, over ${last.at - first.at} ms); ` +
          `tus-js-client saw ${retried.filter((_, i) => i % 2 === 0).join(', ')}; ` +
          `its PATCH from offset ${resumed.offset} ${resumed.at - last.at} ms after the last cut`,
      );
      console.log(`  as tus-js-client saw it: ${lines.join(' | ')}`);

      // The page after the upload: every file uploaded, the retry said.
      expect(await page.locator('#summary').textContent()).toBe(
        `complete: 4 uploaded, 0 failed; ${report.retries.length} request(s) retried`,
      );
      expect(await page.locator(`tr[data-file="${BIG.name}"] .state`).textContent()).toMatch(
        /^uploaded in \d+ ms, retried after: tus: /,
      );
      expect(await page.locator('#files tbody tr').count()).toBe(FILES.length);
      const shot = join(testStack().logDir, 'browser-uppy.png');
      mkdirSync(testStack().logDir, { recursive: true });
      await page.screenshot({ path: shot, fullPage: true });
      expect(statSync(shot).size).toBeGreaterThan(0);
      console.log(`screenshot of the page after the upload: ${shot}`);

      // The bytes, through /v1: the page's SHA-256, S3's CRC-64/NVME named in Repr-Digest.
      for (const f of report.files) {
        const t1 = Date.now();
        const got = await readBack(owner, f.uploadURL.split('/').pop()!, token);
        console.log(
          `  ${f.name}: read back through /v1 and hashed in ${Date.now() - t1} ms; Repr-Digest ${got.reprDigest}`,
        );
        expect({ name: f.name, status: got.status, size: got.size, sha256: got.sha256 }).toEqual({
          name: f.name,
          status: 200,
          size: f.size,
          sha256: f.sha256,
        });
        expect(got.contentType).toBe(f.type);
        expect(got.reprDigest).toMatch(/crc64nvme=:/);
        const digests = digestMembers(got.reprDigest!);
        expect(digests.get('crc64nvme')).toBe(got.crc64nvme);
        // The SHA-256 is named where the door knows it (not for tus uploads, so far): the page's, then.
        if (digests.has('sha-256'))
          expect(digests.get('sha-256')).toBe(Buffer.from(f.sha256, 'hex').toString('base64'));
      }
    }, 110_000);
  },
);
