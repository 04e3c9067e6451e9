// Uploads one small content in three ranges sent out of order through the local stack started
// with `scripts/start.sh --traces`, then takes a PNG of the trace of the request that completed it
// in the trace view, with headless Chromium (Debian's package). The picture in docs/operations.md
// was taken with it:
//   node tools/devstack/trace-screenshot.js docs/images/upload-trace.png
// Settings: GATEWAY_URL (http://127.0.0.1:8080), TRACES_URL (http://127.0.0.1:16686),
// CHROMIUM_PATH (/usr/bin/chromium), KEYS_DIR (.local/dev-keys: the dev key the stack trusts).
'use strict';
const path = require('node:path');
const { randomBytes, randomUUID } = require('node:crypto');
const { ROOT } = require('./stack');

const GATEWAY = process.env.GATEWAY_URL || `http://127.0.0.1:${process.env.PORT || 8080}`;
const TRACES = process.env.TRACES_URL || `http://127.0.0.1:${process.env.CP_TRACES_UI_PORT || 16686}`;
const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
const KEYS_DIR = process.env.KEYS_DIR || path.join(ROOT, '.local', 'dev-keys');

/** One content of 3 MiB in three 1 MiB ranges: the last first (it creates the content), then the first, then the middle one, which completes it. */
async function upload(owner, token) {
  const MiB = 1024 * 1024;
  const bytes = randomBytes(3 * MiB);
  const send = async (method, url, i) => {
    const [start, end] = [i * MiB, (i + 1) * MiB - 1];
    const res = await fetch(url, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        'content-range': `bytes ${start}-${end}/${bytes.length}`,
        'content-type': 'application/octet-stream',
      },
      body: bytes.subarray(start, end + 1),
    });
    if (res.status >= 300) throw new Error(`${method} ${url}: ${res.status} ${await res.text()}`);
    return res;
  };
  const { id } = await (await send('POST', `${GATEWAY}/v1/${owner}/contents`, 2)).json();
  await send('PUT', `${GATEWAY}/v1/${owner}/contents/${id}`, 0);
  const since = Date.now() * 1000;
  const last = await send('PUT', `${GATEWAY}/v1/${owner}/contents/${id}`, 1);
  return { id, since, status: last.status };
}

async function completingTrace(since) {
  for (let i = 0; i < 40; i++) {
    await new Promise((r) => setTimeout(r, 250));
    const res = await fetch(`${TRACES}/api/traces?service=gateway&limit=50&lookback=5m`);
    const { data } = await res.json();
    const found = (data || [])
      .filter((t) => t.spans.some((s) => s.startTime >= since && /upload complete/.test(s.operationName)))
      .sort((a, b) => b.spans.length - a.spans.length);
    if (found.length) return found[0].traceID;
  }
  throw new Error('the trace of the completing request did not reach the trace backend');
}

async function main() {
  const out = process.argv[2];
  if (!out) throw new Error('usage: node tools/devstack/trace-screenshot.js <out.png>');
  const { DevKeys } = require('@cp/credentials');
  const keys = new DevKeys(KEYS_DIR);
  const owner = randomUUID();
  const token = await keys.mint({ owners: [owner] });
  const result = await upload(owner, token);
  const traceId = await completingTrace(result.since);
  const { chromium } = require('playwright-core');
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 720 }, deviceScaleFactor: 1 });
    await page.goto(`${TRACES}/?open#/trace/${traceId}`);
    await page.waitForSelector('.row');
    await page.screenshot({ path: out, fullPage: true });
  } finally {
    await browser.close();
  }
  console.log(`content ${result.id} completed (${result.status}); trace ${traceId}: ${out}`);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
