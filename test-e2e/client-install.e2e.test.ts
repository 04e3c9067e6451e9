// @cp/client as people install it: `pnpm pack` in libs/client (its prepack builds it), then
// `npm install -g <tarball> --prefix <dir>`, and the `content` on that prefix's PATH; and
// `pnpm content` from the workspace root.
import { execFile } from 'node:child_process';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { NO_PROXY_VARS } from './support/contentCli';
import { ROOT } from './support/signin';
import { testStack, tokenFor } from './support/stack';

const run = promisify(execFile);
const CLIENT = join(ROOT, 'libs', 'client');
const manifest = JSON.parse(readFileSync(join(CLIENT, 'package.json'), 'utf8')) as { name: string; version: string };
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describe('the content command line, installed', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-client-install-'));
  const prefix = join(dir, 'global');
  let tarball: string;
  let packed: { path: string; mode: number }[];
  const env = {
    ...process.env,
    ...NO_PROXY_VARS,
    npm_config_audit: 'false',
    npm_config_fund: 'false',
    npm_config_update_notifier: 'false',
  };
  const installed = join(prefix, 'bin', 'content');

  beforeAll(async () => {
    // pnpm pack: it writes the catalog's versions in place of `catalog:` (npm pack would not).
    const { stdout } = await run('pnpm', ['pack', '--pack-destination', dir, '--json'], { cwd: CLIENT, env });
    const info = JSON.parse(stdout.slice(stdout.indexOf('{'))) as { filename: string };
    tarball = info.filename.startsWith('/') ? info.filename : join(dir, info.filename);
    const listing = (await run('tar', ['tvzf', tarball], { env })).stdout.trim().split('\n');
    packed = listing.map((line) => {
      const fields = line.trim().split(/\s+/);
      const bits = fields[0]!.slice(1);
      const mode = [0, 3, 6].reduce(
        (m, i) =>
          (m << 3) | ((bits[i] === 'r' ? 4 : 0) | (bits[i + 1] === 'w' ? 2 : 0) | (bits[i + 2] === 'x' ? 1 : 0)),
        0,
      );
      return { path: fields[fields.length - 1]!.replace(/^package\//, ''), mode };
    });
    await run('npm', ['install', '-g', tarball, '--prefix', prefix], { env });
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('packs dist (no source maps), README and LICENSE only, with an executable bin that starts with a shebang', async () => {
    const paths = packed.map((f) => f.path);
    expect(paths.filter((p) => !/^dist\/.+\.(js|d\.ts)$/.test(p)).sort()).toEqual([
      'LICENSE',
      'README.md',
      'package.json',
    ]);
    expect(paths).toEqual(
      expect.arrayContaining(['dist/index.js', 'dist/index.d.ts', 'dist/cli/main.js', 'dist/generated/openapi.d.ts']),
    );
    // @cp/protocol travels compiled inside the package (its `#protocol` import): no workspace dependency.
    expect(paths).toEqual(expect.arrayContaining(['dist/protocol/index.js', 'dist/protocol/index.d.ts']));
    expect(packed.find((f) => f.path === 'dist/cli/main.js')!.mode & 0o111).toBe(0o111);
    // The package's own build marks it executable too.
    expect(statSync(join(CLIENT, 'dist', 'cli', 'main.js')).mode & 0o100).toBe(0o100);
    const { stdout } = await run('tar', ['-xzOf', tarball, 'package/dist/cli/main.js']);
    expect(stdout.split('\n')[0]).toBe('#!/usr/bin/env node');
  });

  it('is a publishable package: not private, licensed, with an exports map that has its types', () => {
    const pkg = JSON.parse(readFileSync(join(prefix, 'lib', 'node_modules', manifest.name, 'package.json'), 'utf8'));
    expect(pkg).toMatchObject({
      name: '@cp/client',
      license: 'MIT',
      bin: { content: 'dist/cli/main.js' },
      exports: { '.': { types: './dist/index.d.ts' } },
    });
    expect(pkg.private).toBeUndefined();
    expect(readFileSync(join(prefix, 'lib', 'node_modules', manifest.name, 'LICENSE'), 'utf8')).toMatch(/^MIT License/);
  });

  it('`content --version` and `-V` print the package version', async () => {
    expect((await run(installed, ['--version'], { env })).stdout).toBe(`${manifest.version}\n`);
    expect((await run(installed, ['-V'], { env })).stdout).toBe(`${manifest.version}\n`);
  });

  it('uploads and downloads with the installed command, its settings from the environment', async () => {
    const owner = randomUUID();
    const data = randomBytes(1024 * 1024 + 3);
    const file = join(dir, 'up.bin');
    writeFileSync(file, data);
    const settings = {
      ...env,
      CONTENT_URL: testStack().gatewayUrl,
      CONTENT_OWNER: owner,
      CONTENT_TOKEN: await tokenFor([owner]),
      XDG_CONFIG_HOME: dir,
    };
    const up = await run(installed, ['upload', file, '--json'], { env: settings });
    const { id } = JSON.parse(up.stdout) as { id: string };
    const down = await run(installed, ['download', id, join(dir, 'down.bin'), '--sha256', sha256(data), '--json'], {
      env: settings,
    });
    expect(JSON.parse(down.stdout)).toMatchObject({ bytes: data.length, sha256: sha256(data) });
  });

  it('is a library with one entry point: `require("@cp/client")` works, its internals are not exported', async () => {
    const script = [
      "const c = require('@cp/client');",
      "if (typeof c.ContentClient !== 'function') throw new Error('no ContentClient');",
      "console.log(require('@cp/client/package.json').version);",
      "try { require('@cp/client/dist/transport'); console.log('exported'); } catch (e) { console.log(e.code); }",
    ].join('\n');
    const { stdout } = await run(process.execPath, ['-e', script], { cwd: join(prefix, 'lib'), env });
    expect(stdout).toBe(`${manifest.version}\nERR_PACKAGE_PATH_NOT_EXPORTED\n`);
  });

  it('has no dependency of the workspace, and its types take the protocol from its own copy', async () => {
    const pkg = JSON.parse(readFileSync(join(prefix, 'lib', 'node_modules', manifest.name, 'package.json'), 'utf8'));
    expect(
      Object.keys({ ...pkg.dependencies, ...pkg.peerDependencies }).filter((name) => name.startsWith('@cp/')),
    ).toEqual([]);
    // A TypeScript program of the package's users (Node16 resolution) sees PART_SIZE as a number, not `any`.
    const program = join(prefix, 'lib', 'uses-client.ts');
    writeFileSync(
      program,
      "import { PART_SIZE } from '@cp/client';\nconst size: number = PART_SIZE;\n// @ts-expect-error a number is no string\nconst name: string = PART_SIZE;\nexport { size, name };\n",
    );
    const tsc = require.resolve('typescript/bin/tsc', { paths: [ROOT] });
    const options = [
      '--noEmit',
      '--strict',
      '--module',
      'node16',
      '--skipLibCheck',
      '--types',
      'node',
      '--typeRoots',
      join(ROOT, 'node_modules', '@types'),
    ];
    await run(process.execPath, [tsc, ...options, program], { cwd: join(prefix, 'lib'), env });
  });

  it('`pnpm content --version` runs it from the workspace root', async () => {
    expect((await run('pnpm', ['--silent', 'content', '--version'], { cwd: ROOT, env })).stdout).toBe(
      `${manifest.version}\n`,
    );
  });
});
