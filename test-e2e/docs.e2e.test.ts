import { mkdirSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Browser, Locator, Page } from 'playwright-core';
import { describeInChromium, launchChromium } from './support/chromium';
import { ApiDescription } from '../services/gateway/src/docs/ApiDescription';
import { docsRoutes } from '../services/gateway/src/docs/docsRoutes';
import { testStack } from './support/stack';

// eslint-disable-next-line @typescript-eslint/no-require-imports -- express as the gateway has it (the docs routes are mounted on it there too)
const express = require(
  require.resolve('express', { paths: [join(__dirname, '..', 'services', 'gateway')] }),
) as () => {
  use(handler: unknown): void;
  listen(port: number, host: string, listening: () => void): Server;
};
/** Screenshots for a person to look at. */
const SHOTS = join(__dirname, '..', '.local', 'docs-e2e');

/**
 * openapi.yaml has no oneOf, allOf or array schema, so a description that has all three is
 * served by the same routes (and page, assets and policy) on a server of the test's own.
 */
const COMPOSED = `
openapi: 3.1.0
info: { title: Composed schemas, version: '1' }
paths:
  /ranges:
    get:
      operationId: ListRanges
      summary: ListRanges
      tags: [Ranges]
      responses:
        '200':
          description: The ranges received.
          content:
            application/json:
              schema: { $ref: '#/components/schemas/RangeList' }
        '400':
          description: Either error body.
          content:
            application/json:
              schema: { $ref: '#/components/schemas/AnyError' }
components:
  schemas:
    RangeList:
      type: array
      items: { $ref: '#/components/schemas/ByteRange' }
    ByteRange:
      type: object
      required: [first, last]
      properties:
        first: { type: integer }
        last: { type: integer }
    StampedRange:
      allOf:
        - $ref: '#/components/schemas/ByteRange'
        - type: object
          properties:
            receivedAt: { type: string, format: date-time }
    AnyError:
      oneOf:
        - $ref: '#/components/schemas/KebabError'
        - $ref: '#/components/schemas/PascalError'
    KebabError:
      type: object
      properties:
        track-id: { type: string }
    PascalError:
      type: object
      properties:
        Code: { type: string }
`;

/** What a page did besides rendering: requests to other origins, policy violations, errors. */
interface Watched {
  page: Page;
  external: string[];
  violations: string[];
  problems: string[];
}

describeInChromium('docs.e2e')('the API reference page at /docs, in headless Chromium', () => {
  let browser: Browser;
  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    // Playwright gives the browser a throwaway profile directory of its own.
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
  });

  /**
   * Opens `url` with every request to another origin aborted and counted, and every Content
   * Security Policy violation (the page's `securitypolicyviolation` events) and console error
   * recorded. A request the policy refuses never reaches the network, so it shows up as a
   * violation rather than as an external request: between them they count every attempt.
   */
  async function open(url: string): Promise<Watched> {
    const origin = new URL(url).origin;
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const watched: Watched = { page: await context.newPage(), external: [], violations: [], problems: [] };
    await context.route('**/*', async (route) => {
      const target = route.request().url();
      if (new URL(target).origin === origin) return route.continue();
      watched.external.push(target);
      return route.abort('blockedbyclient');
    });
    await context.exposeFunction('reportCspViolation', (text: string) => watched.violations.push(text));
    await context.addInitScript(() => {
      document.addEventListener('securitypolicyviolation', (e) => {
        const report = (window as unknown as { reportCspViolation: (text: string) => void }).reportCspViolation;
        void report(`${e.effectiveDirective} refused ${e.blockedURI || '(inline)'} at ${e.sourceFile}:${e.lineNumber}`);
      });
    });
    watched.page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') watched.problems.push(`console ${m.type()}: ${m.text()}`);
    });
    watched.page.on('pageerror', (e) => watched.problems.push(`page error: ${e.message}`));
    const response = await watched.page.goto(url, { waitUntil: 'load' });
    expect(response?.status()).toBe(200);
    return watched;
  }

  /** The schema `name` in the page's Schemas section, expanded all the way down. */
  async function expandSchema(page: Page, name: string) {
    const schema = page.locator('section.models article[data-json-schema-level="0"]').filter({
      has: page.locator('.json-schema-2020-12__title', { hasText: new RegExp(`^${name}$`) }),
    });
    await schema.locator('.json-schema-2020-12-expand-deep-button').first().click();
    return schema;
  }

  /** Waits until each of `texts` is visible in `scope` (fails naming the one that is not). */
  async function expectVisible(scope: Locator, texts: string[]): Promise<void> {
    for (const text of texts)
      await scope.getByText(text, { exact: true }).first().waitFor({ state: 'visible', timeout: 10_000 });
  }

  function expectNothingElseHappened({ external, violations, problems }: Watched): void {
    expect({ external, violations, problems }).toEqual({ external: [], violations: [], problems: [] });
  }

  it('renders openapi.yaml offline, under its policy, with the content operations, their headers and schemas', async () => {
    const watched = await open(`${testStack().gatewayUrl}/docs`);
    const { page } = watched;
    expect(await page.title()).toMatch(/API reference/);

    for (const [id, method, path] of [
      ['Upload', 'POST', '/v1/{ownerId}/contents'],
      ['UploadByParts', 'PUT', '/v1/{ownerId}/contents/{contentId}'],
      ['Download', 'GET', '/v1/{ownerId}/contents/{contentId}'],
      ['UploadStatus', 'HEAD', '/v1/{ownerId}/contents/{contentId}'],
    ] as const) {
      const operation = page.locator(`#operations-Contents-${id}`);
      await operation.waitFor({ state: 'visible' });
      expect(await operation.locator('.opblock-summary-method').innerText()).toBe(method);
      expect(await operation.locator('.opblock-summary-path').getAttribute('data-path')).toBe(path);
      expect(await operation.locator('.opblock-summary-operation-id').innerText()).toBe(id);
    }
    // The resume endpoint, opened: its response headers are documented.
    const status = page.locator('#operations-Contents-UploadStatus');
    await status.locator('.opblock-summary-control').click();
    await expectVisible(status.locator('.responses-table .headers').first(), [
      'X-Upload-State',
      'X-Content-Total',
      'X-Received-Ranges',
    ]);

    // The /v1 error body, with its stable codes, and a nested object.
    await expectVisible(await expandSchema(page, 'ContentsError'), [
      'track-id',
      'status-code',
      '"urn:error:contents:invalidRange"',
    ]);
    await expectVisible(await expandSchema(page, 'PartStored'), ['is-completed', 'content']);

    await page.screenshot({ path: join(SHOTS, 'reference.png'), fullPage: true });
    expectNothingElseHappened(watched);
    await page.close();
  });

  it('renders oneOf, allOf and array schemas (a description that has them, through the same routes)', async () => {
    const app = express();
    app.use(docsRoutes(new ApiDescription(COMPOSED)));
    const server: Server = await new Promise((resolve) => {
      const s = app.listen(0, '127.0.0.1', () => resolve(s));
    });
    try {
      const watched = await open(`http://127.0.0.1:${(server.address() as AddressInfo).port}/docs`);
      const { page } = watched;
      await page.locator('#operations-Ranges-ListRanges').waitFor({ state: 'visible' });

      // oneOf: "One of", then each alternative with its own fields.
      await expectVisible(await expandSchema(page, 'AnyError'), ['One of', 'track-id', 'Code']);
      // allOf: the parts merged, ByteRange's fields and the one added.
      await expectVisible(await expandSchema(page, 'StampedRange'), ['first', 'last', 'receivedAt']);
      // An array of a $ref'd object, with the object's fields.
      await expectVisible(await expandSchema(page, 'RangeList'), ['array<object>', 'Items', 'first', 'last']);

      await page.locator('section.models').screenshot({ path: join(SHOTS, 'composed-schemas.png') });
      expectNothingElseHappened(watched);
      await page.close();
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('links to the description it was rendered from', async () => {
    const { page } = await open(`${testStack().gatewayUrl}/docs`);
    const link = page.locator('.swagger-ui .info a', { hasText: 'openapi.json' });
    await link.waitFor({ state: 'visible' });
    const res = await page.request.get(new URL((await link.getAttribute('href'))!, page.url()).toString());
    expect(res.status()).toBe(200);
    expect((await res.json()).openapi).toMatch(/^3\.1\.\d+$/);
    const yaml = await page.request.get(new URL('/openapi.yaml', page.url()).toString());
    expect(await yaml.text()).toMatch(/^openapi: 3\.1\.\d/m);
    await page.close();
  });
});

describe('the response headers of /docs and its assets', () => {
  const directives = (policy: string) =>
    new Map(
      policy
        .split(';')
        .map((d) => d.trim().split(/\s+/))
        .map(([name, ...values]) => [name!, values]),
    );

  it('/docs: a strict policy with a new nonce each time, nosniff, never stored', async () => {
    const [first, second] = await Promise.all([
      fetch(`${testStack().gatewayUrl}/docs`),
      fetch(`${testStack().gatewayUrl}/docs`),
    ]);
    expect(first.status).toBe(200);
    expect(first.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(first.headers.get('x-content-type-options')).toBe('nosniff');
    expect(first.headers.get('cache-control')).toBe('no-store');
    const policy = first.headers.get('content-security-policy')!;
    expect(policy).not.toMatch(/unsafe-/);
    const d = directives(policy);
    expect(d.get('default-src')).toEqual(["'self'"]);
    expect(d.get('object-src')).toEqual(["'none'"]);
    expect(d.get('base-uri')).toEqual(["'none'"]);
    expect(d.get('frame-ancestors')).toEqual(["'none'"]);
    expect(d.get('style-src')).toEqual(["'self'"]);
    const [nonce] = d.get('script-src')!;
    expect(d.get('script-src')).toEqual([expect.stringMatching(/^'nonce-[A-Za-z0-9+/]{22}=='$/)]);
    expect(directives(second.headers.get('content-security-policy')!).get('script-src')).not.toEqual([nonce]);

    // Every script is a same-origin file carrying that nonce; nothing inline.
    const html = await first.text();
    const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
    expect(scripts.length).toBeGreaterThan(0);
    for (const [, attributes, body] of scripts) {
      expect(attributes).toContain(`nonce="${nonce!.slice("'nonce-".length, -1)}"`);
      expect(attributes).toMatch(/ src="\/docs\/assets\/[^"]+\.js"/);
      expect(body).toBe('');
    }
  });

  it('the assets: served by the gateway, nosniff, cached for good under a content-named URL, gzipped', async () => {
    const html = await (await fetch(`${testStack().gatewayUrl}/docs`)).text();
    const paths = [...html.matchAll(/(?:src|href)="(\/docs\/assets\/[^"]+)"/g)].map((m) => m[1]!);
    expect(paths).toEqual(expect.arrayContaining([expect.stringMatching(/\.js$/), expect.stringMatching(/\.css$/)]));
    for (const path of paths) {
      const res = await fetch(`${testStack().gatewayUrl}${path}`, { headers: { 'accept-encoding': 'gzip' } });
      expect({ path, status: res.status }).toEqual({ path, status: 200 });
      expect(res.headers.get('content-type')).toBe(
        path.endsWith('.css') ? 'text/css; charset=utf-8' : 'text/javascript; charset=utf-8',
      );
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
      expect(res.headers.get('content-encoding')).toBe('gzip');
      expect(res.headers.get('vary')).toMatch(/Accept-Encoding/i);
      expect((await res.arrayBuffer()).byteLength).toBeGreaterThan(0);
      // As a browser revalidates (fetch() would add `no-cache` to a conditional request otherwise).
      const again = await fetch(`${testStack().gatewayUrl}${path}`, {
        headers: { 'accept-encoding': 'gzip', 'if-none-match': res.headers.get('etag')!, 'cache-control': 'max-age=0' },
      });
      expect(again.status).toBe(304);
    }
    // Without gzip: the file as it is.
    const bundle = paths.find((p) => p.includes('swagger-ui-bundle'))!;
    const plain = await fetch(`${testStack().gatewayUrl}${bundle}`, { headers: { 'accept-encoding': 'identity' } });
    expect(plain.headers.get('content-encoding')).toBeNull();
    // Another representation, another entity tag.
    const gzipped = await fetch(`${testStack().gatewayUrl}${bundle}`, { headers: { 'accept-encoding': 'gzip' } });
    expect(plain.headers.get('etag')).not.toBe(gzipped.headers.get('etag'));
    expect((await plain.text()).length).toBeGreaterThan(1_000_000);
  });
});
