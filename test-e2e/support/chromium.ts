import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

/** Debian's chromium package (deploy/checks/install-tools.sh installs it); CHROMIUM_PATH overrides. */
export const CHROMIUM = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'].find(
  (p): p is string => Boolean(p && existsSync(p)),
);

/** `describe`, or `describe.skip` with the reason printed when there is no chromium here. */
export function describeInChromium(file: string): jest.Describe {
  if (CHROMIUM) return describe;
  process.stderr.write(`${file}: SKIPPED: no chromium found (apt-get install chromium, or set CHROMIUM_PATH)\n`);
  return describe.skip;
}

/**
 * Headless Chromium with a throwaway profile (Playwright's). With `pageOrigin`, a page served over
 * plain HTTP on 127.0.0.1 is seen at that origin (its host name resolves to 127.0.0.1 in this
 * browser only) and is a secure context, as a site served over HTTPS is: WebCrypto's `subtle` is
 * given to secure contexts only.
 */
export function launchChromium(pageOrigin?: string): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      ...(pageOrigin
        ? [
            `--host-resolver-rules=MAP ${new URL(pageOrigin).hostname} 127.0.0.1`,
            `--unsafely-treat-insecure-origin-as-secure=${pageOrigin}`,
          ]
        : []),
    ],
  });
}
