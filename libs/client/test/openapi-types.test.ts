// The client's request and response types come from services/gateway/openapi.yaml: the checked-in
// src/generated/openapi.ts is what openapi-typescript makes of it today, and the client does not
// compile against a description whose fields it reads were renamed.
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

const ROOT = join(__dirname, '..', '..', '..');
const CLIENT = join(ROOT, 'libs', 'client');
const OPENAPI = join(ROOT, 'services', 'gateway', 'openapi.yaml');
const GENERATED = join(CLIENT, 'src', 'generated', 'openapi.ts');

/** A package's command-line entry point, run with this node. */
function runBin(pkg: string, name: string, args: string[], input?: string): string {
  const manifest = require.resolve(`${pkg}/package.json`, { paths: [CLIENT] });
  const { bin } = JSON.parse(readFileSync(manifest, 'utf8')) as { bin: string | Record<string, string> };
  return execFileSync(
    process.execPath,
    [join(dirname(manifest), typeof bin === 'string' ? bin : bin[name]!), ...args],
    {
      encoding: 'utf8',
      input,
      stdio: ['pipe', 'pipe', 'pipe'],
    },
  );
}

/** What `pnpm --filter @cp/client generate:types` writes for a description: openapi-typescript, then prettier. */
function generate(openapiPath: string): string {
  return runBin(
    'prettier',
    'prettier',
    ['--stdin-filepath', GENERATED],
    runBin('openapi-typescript', 'openapi-typescript', [openapiPath]),
  );
}

describe('types generated from openapi.yaml', () => {
  let dir: string;
  beforeAll(() => {
    // Inside the package's node_modules, so the copied sources find their dependencies.
    mkdirSync(join(CLIENT, 'node_modules', '.cache'), { recursive: true });
    dir = mkdtempSync(join(CLIENT, 'node_modules', '.cache', 'openapi-types-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('are up to date (else run `pnpm --filter @cp/client generate:types`)', () => {
    expect(generate(OPENAPI)).toBe(readFileSync(GENERATED, 'utf8'));
  });

  it('no longer match, and the client no longer compiles, when a response field it reads is renamed', () => {
    const renamed = readFileSync(OPENAPI, 'utf8').replace(
      /(SessionPair:\n\s+type: object\n\s+required: \[)Sid(, RefreshToken\]\n\s+properties:\n\s+)Sid:/,
      '$1SessionId$2SessionId:',
    );
    expect(renamed).not.toBe(readFileSync(OPENAPI, 'utf8'));
    const yaml = join(dir, 'renamed.yaml');
    writeFileSync(yaml, renamed);
    const types = generate(yaml);
    expect(types).not.toBe(readFileSync(GENERATED, 'utf8'));

    // The client's sources with the regenerated types: tsc must refuse them where they read `Sid`.
    const src = join(dir, 'src');
    cpSync(join(CLIENT, 'src'), src, { recursive: true });
    writeFileSync(join(src, 'generated', 'openapi.ts'), types);
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        extends: join(ROOT, 'tsconfig.base.json'),
        compilerOptions: {
          noEmit: true,
          composite: false,
          lib: ['ES2022', 'DOM'], // as libs/client/tsconfig.json: src/browser is for web pages
          typeRoots: [join(ROOT, 'node_modules', '@types')],
        },
        include: ['src'],
      }),
    );
    const tsc = require.resolve('typescript/bin/tsc', { paths: [ROOT] });
    let output = '';
    try {
      execFileSync(process.execPath, [tsc, '-p', dir], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
        cwd: CLIENT,
      });
    } catch (error) {
      output = String((error as { stdout?: string }).stdout);
    }
    expect(output).toMatch(/src\/Session\.ts.*Property 'Sid' does not exist/);
    // ... and for nothing else (the copy itself compiles).
    expect(output.split('\n').filter((line) => /error TS/.test(line) && !/'Sid'/.test(line))).toEqual([]);
  });
});
