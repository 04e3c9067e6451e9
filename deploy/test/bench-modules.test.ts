import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

// The benchmarks and tools load the services' and libs' built modules by path (bench/scale.js
// writes sessions with the session-service's own classes). A module merged or renamed in src/
// must not leave a benchmark that fails on its first line: every such path must name a source
// file that exists.
const ROOT = join(__dirname, '..', '..');
const DIRS: Record<string, string> = {
  ROOT: '',
  AUTH_DIR: 'services/auth-service/',
  SESSION_DIR: 'services/session-service/',
};

function scripts(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory()
      ? e.name === 'node_modules'
        ? []
        : scripts(join(dir, e.name))
      : /\.(c|m)?js$/.test(e.name)
        ? [join(dir, e.name)]
        : [],
  );
}

/** Each `dist/...` module a script names, as the package-relative source path it is built from. */
function distModules(file: string): string[] {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const found: string[] = [];
  // '../libs/client/dist/fileDigests' or 'services/content-service/dist/uploads/PartGrid.js'
  for (const m of text.matchAll(/'(?:\.\.\/)*((?:services|libs)\/[a-z-]+)\/dist\/([\w/.-]+?)(?:\.js)?'/g))
    found.push(`${m[1]}/src/${m[2]}.ts`);
  // path.join(AUTH_DIR, 'dist/certificates/CertificateText.js')
  for (const m of text.matchAll(/path\.join\((\w+), '((?:services|libs)\/[a-z-]+\/)?dist\/([\w/.-]+?)(?:\.js)?'\)/g)) {
    const base = m[2] ?? DIRS[m[1]!];
    if (base === undefined) throw new Error(`${file}: unknown base ${m[1]}`);
    found.push(`${base}src/${m[3]}.ts`);
  }
  return [...new Set(found)];
}

describe('modules the benchmarks and tools load from dist/', () => {
  const named = [...scripts('bench'), ...scripts('tools')].flatMap((file) =>
    distModules(file).map((source) => ({ file, source })),
  );

  it('are found in the scripts (the check reads them)', () => {
    expect(named.map((n) => n.source)).toEqual(
      expect.arrayContaining(['services/session-service/src/sessions/SessionService.ts']),
    );
  });

  it.each(named.map((n) => [n.file, n.source]))('%s: %s exists', (_file, source) => {
    expect(existsSync(join(ROOT, source))).toBe(true);
  });
});
