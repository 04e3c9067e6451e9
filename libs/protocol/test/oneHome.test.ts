// Each protocol fact has one home, libs/protocol/src: a second definition of the part size, the
// content limit, the Content-Range or Range grammar, or a shared header's name anywhere in
// services/*/src or libs/*/src fails here. Take it from @cp/protocol (the client: from `#protocol`).
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const ROOT = join(__dirname, '..', '..', '..');
const HOME = 'libs/protocol/src/';

const FACTS: { fact: string; pattern: RegExp }[] = [
  {
    fact: 'the part size',
    pattern: /\b64\s*\*\s*1024\s*\*\s*1024\b(?!\s*\*)|\b67108864\b|\b2\s*\*\*\s*26\b|\b64\s*\*\s*2\s*\*\*\s*20\b/,
  },
  {
    fact: 'the content limit',
    pattern: /\b30\s*\*\s*1024\s*\*\s*1024\s*\*\s*1024\b|\b32212254720\b|\b30\s*\*\s*2\s*\*\*\s*30\b/,
  },
  {
    fact: 'a declaration of PART_SIZE or MAX_CONTENT_SIZE',
    pattern: /\b(const|let|var)\s+(PART_SIZE|MAX_CONTENT_SIZE)\b/,
  },
  { fact: 'the Content-Range or Range grammar', pattern: /\/\^bytes[[ =(]/ },
  { fact: 'the X-Received-Ranges grammar', pattern: /\/\^\(\\d\+\)-\(\\d\+\)\$\// },
  {
    fact: 'a shared header name',
    pattern:
      /['"`](content-range|x-upload-state|x-content-total|x-received-ranges|x-error-id|x-request-id|x-kontur-apikey|x-refresh-token)['"`]/i,
  },
];

function sources(): { file: string; text: string }[] {
  const found: { file: string; text: string }[] = [];
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) {
        if (name !== 'generated') walk(path);
      } else if (/\.(ts|js)$/.test(name) && !name.endsWith('.d.ts'))
        found.push({ file: relative(ROOT, path), text: readFileSync(path, 'utf8') });
    }
  };
  for (const top of ['services', 'libs']) {
    for (const pkg of readdirSync(join(ROOT, top))) {
      const src = join(ROOT, top, pkg, 'src');
      if (statSync(join(ROOT, top, pkg)).isDirectory() && isDirectory(src)) walk(src);
    }
  }
  return found;
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** The facts a file defines, as "fact: the matching line". */
function definitions(text: string): Map<string, string> {
  const found = new Map<string, string>();
  for (const { fact, pattern } of FACTS) {
    const line = text.split('\n').find((l) => pattern.test(l) && !/^\s*(\/\/|\*|\/\*)/.test(l));
    if (line !== undefined) found.set(fact, line.trim());
  }
  return found;
}

describe('one home for each protocol fact', () => {
  const files = sources();

  it('has libs/protocol/src define the part size, the content limit and the grammars', () => {
    const home = new Set(files.filter((f) => f.file.startsWith(HOME)).flatMap((f) => [...definitions(f.text).keys()]));
    expect([...home].sort()).toEqual(FACTS.map((f) => f.fact).sort());
  });

  it('finds none of them defined anywhere else in services/*/src and libs/*/src', () => {
    const elsewhere = files
      .filter((f) => !f.file.startsWith(HOME))
      .flatMap((f) => [...definitions(f.text)].map(([fact, line]) => `${f.file}: ${fact}: ${line}`));
    expect(elsewhere).toEqual([]);
  });
});
