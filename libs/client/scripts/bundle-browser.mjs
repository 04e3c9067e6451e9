// Bundles src/browser/index.ts into dist/browser/content-client.js, an ES module for web pages.
// esbuild's browser platform refuses any import of a Node.js built-in, and the bundle is then
// searched for the Node globals a browser lacks: either is a failed build.
import { build } from 'esbuild';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const outfile = join(root, 'dist/browser/content-client.js');
await build({
  entryPoints: [join(root, 'src/browser/index.ts')],
  outfile,
  bundle: true,
  platform: 'browser',
  format: 'esm',
  target: 'es2022',
  sourcemap: true,
  logLevel: 'warning',
});
const code = readFileSync(outfile, 'utf8');
const nodeOnly = /\b(Buffer|process|require|__dirname)\s*[.(]|from\s*["']node:/.exec(code);
if (nodeOnly) {
  console.error(
    `bundle-browser: dist/browser/content-client.js uses ${JSON.stringify(nodeOnly[0])}, which browsers lack`,
  );
  process.exit(1);
}
console.log(`bundle-browser: dist/browser/content-client.js, ${(code.length / 1024).toFixed(0)} KiB`);
