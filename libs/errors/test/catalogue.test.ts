import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { parse } from 'yaml';
import { ERROR_CATALOGUE, type ErrorCode, type ErrorSpec } from '../src/catalogue';
import { hasErrorCode, INTERNAL_ERRORS } from '../src/internalErrors';
import { HINTS } from '../../client/src/errors';

/** The generator of openapi.yaml's code enums (plain JavaScript, run by `pnpm generate:errors`). */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const generated = require('../generate') as {
  renderOpenapi(yaml: string, catalogue: unknown): string;
  OPENAPI_FILE: string;
};

const ROOT = join(__dirname, '../../..');
const CATALOGUE_FILES = ['libs/errors/src/catalogue.ts', 'libs/errors/src/contentsErrors.ts'];
const INTERNAL_FILE = 'libs/errors/src/internalErrors.ts';

function sources(): { file: string; text: string }[] {
  const found: { file: string; text: string }[] = [];
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (name.endsWith('.ts') && !name.endsWith('.d.ts'))
        found.push({ file: relative(ROOT, path), text: readFileSync(path, 'utf8') });
    }
  };
  for (const top of ['services', 'libs']) {
    for (const pkg of readdirSync(join(ROOT, top))) {
      const src = join(ROOT, top, pkg, 'src');
      if (statSync(join(ROOT, top, pkg)).isDirectory() && safeIsDir(src)) walk(src);
    }
  }
  return found.filter((s) => !CATALOGUE_FILES.includes(s.file) && s.file !== INTERNAL_FILE);
}

function safeIsDir(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

function lineOf(text: string, index: number): number {
  return text.slice(0, index).split('\n').length;
}

// How code raises a catalogued error: ServiceError.of('code', ...) in the services and libs, and
// new EdgeRefusal('code', ...) for the gateway's own answers.
const USE = /(?:ServiceError\.of|new EdgeRefusal)\(\s*(['"`]?)([A-Za-z]*)\1?/g;

// Ways a code used to be written by hand, each a bare string the catalogue does not see.
const BARE: [RegExp, string][] = [
  [/new ServiceError\(/g, 'new ServiceError(...) (use ServiceError.of)'],
  [/ServiceError\.(?!of\b)[a-zA-Z]+\(/g, 'a ServiceError factory other than of()'],
  [/\b[1-5]\d\d\s*,\s*['"`][A-Za-z]+['"`]/g, 'a status next to a string code'],
  [/\bcode(?:\s*:\s*[A-Za-z]+)?\s*[:=]\s*['"`][A-Za-z]+['"`]/g, 'a code assigned a string'],
  [/\bCode\s*:\s*['"`]/g, 'a {"Code"} body built by hand'],
  [/urn:error:contents:[A-Za-z]/g, 'a /v1 error id written out'],
];

// The client reads the API's codes (and names a few of its own for local errors); it raises none.
const SCANNED = sources().filter((s) => !s.file.startsWith('libs/client/'));

const catalogue: Record<string, ErrorSpec> = ERROR_CATALOGUE;
const codes = Object.keys(catalogue) as ErrorCode[];
const published = codes.filter((c) => !catalogue[c]!.internal);

const openapi = parse(readFileSync(join(ROOT, 'services/gateway/openapi.yaml'), 'utf8')) as {
  components: { schemas: Record<string, { properties: Record<string, { enum?: string[] }> }> };
};
const contentsIds = openapi.components.schemas.ContentsError!.properties.id!.enum ?? [];
const signinCodes = openapi.components.schemas.CodeError!.properties.Code!.enum ?? [];
const capitalised = (code: string) => code.charAt(0).toUpperCase() + code.slice(1);

describe('the error catalogue', () => {
  it('is what every throw site in services/*/src and libs/*/src names, by a literal catalogued code', () => {
    const problems: string[] = [];
    const used = new Set<string>();
    for (const { file, text } of SCANNED) {
      for (const m of text.matchAll(USE)) {
        const [, quote, code] = m;
        if (!quote) problems.push(`${file}:${lineOf(text, m.index)}: the code is not a string literal`);
        else if (!Object.hasOwn(catalogue, code!))
          problems.push(`${file}:${lineOf(text, m.index)}: ${code} is not in the catalogue`);
        else used.add(code!);
      }
    }
    expect(problems).toEqual([]);
    // Nothing declared that nothing raises.
    expect(codes.filter((c) => !used.has(c))).toEqual([]);
  });

  it('leaves no bare-string error code at a throw site', () => {
    const problems: string[] = [];
    for (const { file, text } of SCANNED) {
      if (file.startsWith('libs/errors/src/')) continue;
      for (const [pattern, what] of BARE) {
        for (const m of text.matchAll(pattern)) problems.push(`${file}:${lineOf(text, m.index)}: ${what}: ${m[0]}`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('spells each family its own way', () => {
    for (const code of codes) {
      const { family } = catalogue[code]!;
      expect([code, /^[A-Z][A-Za-z]+$/.test(code)]).toEqual([code, family === 'signin']);
    }
  });

  it('gives every 503 a Retry-After', () => {
    for (const code of codes.filter((c) => catalogue[c]!.status === 503)) {
      const { retryAfterSeconds = 5 } = catalogue[code]!;
      expect([code, retryAfterSeconds > 0]).toEqual([code, true]);
    }
  });

  it("is in openapi.yaml: /v1 codes in ContentsError's id, /auth and /sessions codes in CodeError's Code", () => {
    const missing: string[] = [];
    for (const code of published) {
      const { family } = catalogue[code]!;
      if (family !== 'signin' && !contentsIds.includes(`urn:error:contents:${code}`))
        missing.push(`ContentsError.id: urn:error:contents:${code}`);
      // The gateway's own codes are answered on /auth and /sessions too, capitalised.
      const signin = family === 'signin' ? code : family === 'gateway' ? capitalised(code) : null;
      if (signin && !signinCodes.includes(signin)) missing.push(`CodeError.Code: ${signin}`);
    }
    expect(missing).toEqual([]);
  });

  it("is what the client's generated hints and openapi.yaml's code enums say (else `pnpm generate:errors`)", () => {
    expect(HINTS).toEqual(Object.fromEntries(published.map((code) => [code, catalogue[code]!.hint])));
    const yaml = readFileSync(generated.OPENAPI_FILE, 'utf8');
    expect(yaml === generated.renderOpenapi(yaml, ERROR_CATALOGUE)).toBe(true);
  });

  it('has a hint for every code the API answers, and none for the internal ones', () => {
    for (const code of codes) {
      const spec = catalogue[code]!;
      expect([code, typeof spec.hint === 'string' && spec.hint.length > 0]).toEqual([code, !spec.internal]);
    }
  });

  it("has a hint in the client's errors.ts for every code the API answers", () => {
    expect(published.filter((c) => HINTS[c] === undefined)).toEqual([]);
  });

  it('answers partWriting with a hint and in openapi.yaml', () => {
    expect(HINTS.partWriting).toBeDefined();
    expect(contentsIds).toContain('urn:error:contents:partWriting');
  });
});

// An internal code as a class declares it, as any source names it, and an error class's body (the
// CLIs' empty `class UsageError extends Error {}` never leave their file and need none).
const DECLARED = /\breadonly code = '(CP_ERR_[A-Z0-9_]+)';/g;
const NAMED = /\bCP_ERR_[A-Z0-9_]*/g;
const ERROR_CLASS = /\bclass (\w+) extends Error \{\n([\s\S]*?)\n\}/g;

describe('the internal error codes', () => {
  const internal = Object.keys(INTERNAL_ERRORS);

  it('are each declared by one error class, and every CP_ERR_ code the sources name is one of them', () => {
    const declared = SCANNED.flatMap(({ text }) => [...text.matchAll(DECLARED)].map((m) => m[1]!));
    expect([...declared].sort()).toEqual([...internal].sort());
    const unknown = SCANNED.flatMap(({ file, text }) =>
      [...text.matchAll(NAMED)].filter((m) => !internal.includes(m[0])).map((m) => `${file}: ${m[0]}`),
    );
    expect(unknown).toEqual([]);
  });

  it('are carried by every error class with a body in services/*/src and libs/*/src (but the client)', () => {
    const codeless = SCANNED.flatMap(({ file, text }) =>
      [...text.matchAll(ERROR_CLASS)].filter((m) => !/\breadonly code\b/.test(m[2]!)).map((m) => `${file}: ${m[1]}`),
    );
    expect(codeless).toEqual([]);
  });

  it('are listed in docs/operations.md', () => {
    const operations = readFileSync(join(ROOT, 'docs/operations.md'), 'utf8');
    expect(internal.filter((code) => !operations.includes(`| \`${code}\``))).toEqual([]);
  });

  it('are told by hasErrorCode on any object that carries one', () => {
    expect(
      hasErrorCode(Object.assign(new Error('down'), { code: 'CP_ERR_REDIS_UNAVAILABLE' }), 'CP_ERR_REDIS_UNAVAILABLE'),
    ).toBe(true);
    expect(hasErrorCode({ code: 'CP_ERR_STORAGE_TIMEOUT' }, 'CP_ERR_REDIS_UNAVAILABLE')).toBe(false);
    for (const other of [null, undefined, 'CP_ERR_REDIS_UNAVAILABLE', new Error('CP_ERR_REDIS_UNAVAILABLE')])
      expect(hasErrorCode(other, 'CP_ERR_REDIS_UNAVAILABLE')).toBe(false);
  });
});
