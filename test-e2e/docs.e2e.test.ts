import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import { testStack } from './support/stack';

// Debian's chromium package (deploy/checks/install-tools.sh installs it); CHROMIUM_PATH overrides.
const CHROMIUM = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p): p is string => Boolean(p && existsSync(p)));
if (!CHROMIUM) {
  process.stderr.write('docs.e2e: SKIPPED: no chromium found (apt-get install chromium, or set CHROMIUM_PATH)\n');
}

(CHROMIUM ? describe : describe.skip)('the API reference page at /docs, in headless Chromium', () => {
  let browser: Browser;
  beforeAll(async () => {
    // Playwright gives the browser a throwaway profile directory of its own.
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
    });
  });
  afterAll(async () => {
    await browser?.close();
  });

  it('loads without errors and shows the three content operations with their method and path', async () => {
    const page = await browser.newPage();
    const problems: string[] = [];
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(`console: ${m.text()}`);
    });
    page.on('requestfailed', (r) => problems.push(`request failed: ${r.url()}`));

    const response = await page.goto(`${testStack().gatewayUrl}/docs`, { waitUntil: 'load' });
    expect(response?.status()).toBe(200);
    expect(await page.title()).toMatch(/API reference/);

    for (const [id, method, path] of [
      ['Upload', 'POST', '/v1/{ownerId}/contents'],
      ['UploadByParts', 'PUT', '/v1/{ownerId}/contents/{contentId}'],
      ['Download', 'GET', '/v1/{ownerId}/contents/{contentId}'],
    ] as const) {
      const section = page.locator(`#op-${id}`);
      await section.waitFor({ state: 'visible' });
      expect(await section.locator('.summary').innerText()).toMatch(new RegExp(`^${id}\\b`));
      expect(await section.locator('.method').innerText()).toBe(method);
      expect(await section.locator('.path').innerText()).toBe(path);
      // The navigation links to it, and the link is visible to a reader.
      const link = page.locator(`nav a[href="#op-${id}"]`);
      expect(await link.isVisible()).toBe(true);
    }
    // The resume endpoint is documented with its headers.
    const status = await page.locator('#op-UploadStatus').innerText();
    for (const header of ['X-Upload-State', 'X-Content-Total', 'X-Received-Ranges']) expect(status).toContain(header);
    expect(problems).toEqual([]);
    await page.close();
  });

  it('links to the description it was rendered from', async () => {
    const page = await browser.newPage();
    await page.goto(`${testStack().gatewayUrl}/docs`);
    const href = await page.locator('header a', { hasText: 'openapi.yaml' }).getAttribute('href');
    const res = await page.request.get(new URL(href!, page.url()).toString());
    expect(res.status()).toBe(200);
    expect(await res.text()).toMatch(/^openapi: 3\.1\.\d/m);
    await page.close();
  });
});
