// README.md is the door and docs/ holds the rest: every relative link in them, and every #anchor,
// must lead to a file that exists and a heading it has (GitHub's heading slugs), and the README
// stays short. No servers: the Markdown files are read from the working tree.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

const ROOT = join(__dirname, '..', '..');
const README_MAX_LINES = 200;

/** README.md and every Markdown file under docs/. */
function markdownFiles(): string[] {
  const docs = join(ROOT, 'docs');
  const found = existsSync(docs)
    ? readdirSync(docs, { recursive: true, encoding: 'utf8' })
        .filter((name) => name.endsWith('.md'))
        .map((name) => join(docs, name))
    : [];
  return [join(ROOT, 'README.md'), ...found.sort()];
}

/** The lines of a Markdown file outside fenced code blocks (``` or ~~~), each with its 1-based number. */
function proseLines(text: string): { line: string; number: number }[] {
  const out: { line: string; number: number }[] = [];
  let fence: string | null = null;
  text.split('\n').forEach((line, i) => {
    const marker = /^\s{0,3}(`{3,}|~{3,})/.exec(line)?.[1];
    if (fence === null) {
      if (marker) fence = marker;
      else out.push({ line, number: i + 1 });
      return;
    }
    // A fence closes with the same character, at least as many, and nothing after it.
    if (marker?.[0] === fence[0] && marker.length >= fence.length && line.trim() === marker) fence = null;
  });
  return out;
}

/** A line without its code spans, which hold text, never links. */
const withoutCodeSpans = (line: string): string => line.replace(/(`+)[\s\S]*?\1/g, '');

/**
 * GitHub's anchor for a heading: the rendered text (links as their text, no code marks or
 * emphasis), lower case, with everything but letters, digits, marks, spaces, `-` and `_` dropped,
 * and each space turned into `-`.
 */
function githubSlug(heading: string): string {
  return heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/[`*]/g, '')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\p{M}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The anchors a Markdown file has: its headings' slugs (repeats get -1, -2 ...) and explicit ids. */
function anchorsOf(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const { line } of proseLines(text)) {
    const heading = /^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1];
    if (heading !== undefined) {
      const slug = githubSlug(heading);
      const n = seen.get(slug) ?? 0;
      seen.set(slug, n + 1);
      anchors.add(n === 0 ? slug : `${slug}-${n}`);
    }
    for (const m of line.matchAll(/<a\s[^>]*(?:name|id)="([^"]+)"/g)) anchors.add(m[1]!);
  }
  return anchors;
}

interface Link {
  file: string;
  line: number;
  target: string;
}

/** Inline links and images `[text](target "title")` and reference definitions `[name]: target`. */
function linksOf(file: string, text: string): Link[] {
  const links: Link[] = [];
  for (const { line, number } of proseLines(text)) {
    const prose = withoutCodeSpans(line);
    for (const m of prose.matchAll(/\]\(\s*(<[^>]*>|[^)\s]+)(?:\s+(?:"[^"]*"|'[^']*'))?\s*\)/g)) {
      links.push({ file, line: number, target: m[1]!.replace(/^<(.*)>$/, '$1') });
    }
    const definition = /^\s{0,3}\[[^\]]+\]:\s*(\S+)/.exec(prose);
    if (definition) links.push({ file, line: number, target: definition[1]! });
  }
  return links;
}

const isExternal = (target: string): boolean => /^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//');

const anchorCache = new Map<string, Set<string>>();
function anchorsIn(file: string): Set<string> {
  let anchors = anchorCache.get(file);
  if (!anchors) {
    anchors = anchorsOf(readFileSync(file, 'utf8'));
    anchorCache.set(file, anchors);
  }
  return anchors;
}

/** Why a relative link does not resolve; null when it does. */
function problemWith(link: Link): string | null {
  const hashAt = link.target.indexOf('#');
  const pathPart = hashAt === -1 ? link.target : link.target.slice(0, hashAt);
  const anchor = hashAt === -1 ? null : decodeURIComponent(link.target.slice(hashAt + 1));
  const target = pathPart === '' ? link.file : resolve(dirname(link.file), decodeURIComponent(pathPart));
  if (target !== ROOT && !target.startsWith(ROOT + sep)) return 'leads outside the repository';
  if (!existsSync(target)) return `${relative(ROOT, target)} does not exist`;
  if (anchor === null) return null;
  if (statSync(target).isDirectory() || !target.endsWith('.md')) return `#${anchor} on a file that is not Markdown`;
  return anchorsIn(target).has(anchor) ? null : `${relative(ROOT, target)} has no heading #${anchor}`;
}

describe('the documentation', () => {
  const files = markdownFiles();

  it('is README.md and pages under docs/', () => {
    expect(files.map((f) => relative(ROOT, f))).toEqual(expect.arrayContaining(['README.md']));
    expect(files.some((f) => relative(ROOT, f).startsWith(`docs${sep}`))).toBe(true);
  });

  it(`keeps the README within ${README_MAX_LINES} lines`, () => {
    const lines = readFileSync(join(ROOT, 'README.md'), 'utf8').replace(/\n$/, '').split('\n').length;
    expect(lines).toBeLessThanOrEqual(README_MAX_LINES);
  });

  it('links only to files that exist and headings they have', () => {
    const all = files.flatMap((file) => linksOf(file, readFileSync(file, 'utf8')));
    const links = all.filter((l) => !isExternal(l.target));
    expect(links.length).toBeGreaterThan(0);
    const broken = links.flatMap((link) => {
      const problem = problemWith(link);
      return problem ? [`${relative(ROOT, link.file)}:${link.line}: (${link.target}) ${problem}`] : [];
    });
    expect(broken).toEqual([]);
  });
});

describe('githubSlug', () => {
  it.each([
    ['The content API (`/v1`)', 'the-content-api-v1'],
    ['Compose (one machine with a container engine)', 'compose-one-machine-with-a-container-engine'],
    ['Client retries: a time budget, not a count', 'client-retries-a-time-budget-not-a-count'],
    ['Proxy variables from `process.env`', 'proxy-variables-from-processenv'],
    ['A local cluster, step by step (kind)', 'a-local-cluster-step-by-step-kind'],
    ['What survives what', 'what-survives-what'],
    ['Snake_case and *emphasis* — a [link](x.md)', 'snake_case-and-emphasis--a-link'],
  ])('%s → %s', (heading, slug) => {
    expect(githubSlug(heading)).toBe(slug);
  });

  it('numbers repeated headings as GitHub does', () => {
    const text = '# Notes\n## Notes\n```\n# not a heading\n```\n## Notes\n';
    expect([...anchorsOf(text)]).toEqual(['notes', 'notes-1', 'notes-2']);
  });

  it('finds no links inside code', () => {
    const text = 'see [a](a.md) and `[b](b.md)`\n```\n[c](c.md)\n```\n[d]: d.md\n';
    expect(linksOf('x.md', text).map((l) => l.target)).toEqual(['a.md', 'd.md']);
  });
});
