// hadolint cannot be had from the registries this project may use, so this test holds the
// Dockerfile to the rules the project needs (hadolint's numbers in brackets where one applies),
// after dockerfile-utils has checked that it parses and that every instruction is well formed.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DockerfileParser } from 'dockerfile-ast';
import { validate } from 'dockerfile-utils';
import { ROOT } from './support/render';

const DOCKERFILE = join(ROOT, 'deploy', 'Dockerfile');
const text = readFileSync(DOCKERFILE, 'utf8');
const lines = text.split('\n');

interface Step {
  keyword: string;
  /** The instruction as written, continuation lines joined, flags included. */
  raw: string;
  args: string;
}
interface Stage {
  name: string | null;
  image: string;
  steps: Step[];
}

function parse(): { globalArgs: Record<string, string>; stages: Stage[] } {
  const globalArgs: Record<string, string> = {};
  const stages: Stage[] = [];
  for (const instruction of DockerfileParser.parse(text).getInstructions()) {
    const range = instruction.getRange();
    const raw = lines
      .slice(range.start.line, range.end.line + 1)
      .map((l) => l.replace(/\\\s*$/, ''))
      .join(' ')
      .replace(/\s+/g, ' ')
      .trim();
    const step = { keyword: instruction.getKeyword(), raw, args: instruction.getArgumentsContent() ?? '' };
    if (step.keyword === 'FROM') {
      const m = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(step.args.trim());
      stages.push({ image: m?.[1] ?? '', name: m?.[2] ?? null, steps: [] });
    } else if (stages.length === 0 && step.keyword === 'ARG') {
      const [k, v = ''] = step.args.split('=');
      globalArgs[k!.trim()] = v.trim();
    } else {
      stages.at(-1)?.steps.push(step);
    }
  }
  return { globalArgs, stages };
}

const { globalArgs, stages } = parse();
const runtime = stages.at(-1)!;
const build = stages.find((s) => s.name === 'build');
const resolve = (image: string) =>
  image.replace(/\$\{?(\w+)\}?/g, (_, name: string) => globalArgs[name] ?? `<unset ${name}>`);
const all = stages.flatMap((s) => s.steps);

describe('deploy/Dockerfile', () => {
  it('parses, and dockerfile-utils finds nothing wrong', () => {
    expect(validate(text).map((d) => `${d.range.start.line + 1}: ${d.message}`)).toEqual([]);
  });

  it('is multi-stage: a named build stage and a named runtime stage last', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    for (const s of stages) expect(s.name).toMatch(/^[a-z][a-z0-9_-]*$/);
    expect(build).toBeDefined();
    expect(runtime.name).toBe('runtime');
  });

  it('starts every stage from an image with an explicit tag, not latest [DL3006, DL3007]', () => {
    for (const s of stages) {
      const image = resolve(s.image);
      expect(image).toMatch(/^[\w./-]+(:[\w.-]+|@sha256:[0-9a-f]{64})$/);
      expect(image).not.toMatch(/:latest$/);
    }
  });

  it('builds with the lockfile frozen and copies only production dependencies (pnpm deploy --prod)', () => {
    const runs = build!.steps.filter((s) => s.keyword === 'RUN').map((s) => s.raw);
    expect(runs.some((r) => /pnpm (install|fetch)\b[^&]*--frozen-lockfile/.test(r))).toBe(true);
    const deploy = runs.find((r) => /pnpm .*\bdeploy\b/.test(r));
    expect(deploy).toMatch(/--prod\b/);
    expect(deploy).toMatch(/--filter "?@cp\/\$\{?SERVICE\}?"?/);
  });

  it('puts into the runtime stage nothing but the deployed service (no workspace, no devDependencies)', () => {
    const copies = runtime.steps.filter((s) => s.keyword === 'COPY' || s.keyword === 'ADD');
    expect(copies.length).toBeGreaterThan(0);
    // The target directory of `pnpm ... deploy [flags] <dir>`.
    const deployOut = /pnpm [^&]*\bdeploy\b(?:\s+--?[\w-]+)*\s+(\/[^\s&]+)/.exec(
      build!.steps.map((s) => s.raw).join(' '),
    )?.[1];
    expect(deployOut).toBeDefined();
    for (const c of copies) {
      expect(c.keyword).toBe('COPY');
      expect(c.raw).toMatch(/--from=build\b/);
      expect(c.args.split(/\s+/)[0]!.replace(/\/$/, '')).toBe(deployOut);
    }
    const runs = runtime.steps.filter((s) => s.keyword === 'RUN').map((s) => s.raw);
    for (const r of runs) expect(r).not.toMatch(/\b(npm|pnpm|yarn) (install|ci|add)\b/);
  });

  it('runs as a numeric non-root user in the runtime stage [DL3002]', () => {
    const users = runtime.steps.filter((s) => s.keyword === 'USER');
    expect(users.length).toBeGreaterThan(0);
    const last = users.at(-1)!.args.trim();
    expect(last).toMatch(/^\d+(:\d+)?$/);
    expect(Number(last.split(':')[0])).toBeGreaterThan(0);
    const userAt = runtime.steps.indexOf(users.at(-1)!);
    const cmdAt = runtime.steps.findIndex((s) => s.keyword === 'CMD');
    expect(userAt).toBeLessThan(cmdAt);
    // Nothing after USER writes into the image: the app stays read-only to the user it runs as.
    expect(runtime.steps.slice(userAt).filter((s) => ['RUN', 'COPY', 'ADD'].includes(s.keyword))).toEqual([]);
  });

  it('has a HEALTHCHECK on /healthz and starts node on dist/main.js in exec form [DL3025]', () => {
    const health = runtime.steps.filter((s) => s.keyword === 'HEALTHCHECK');
    expect(health).toHaveLength(1);
    expect(health[0]!.raw).toMatch(/CMD \[.*\/healthz/);
    const cmd = runtime.steps.filter((s) => s.keyword === 'CMD');
    expect(cmd).toHaveLength(1);
    expect(JSON.parse(cmd[0]!.args)).toEqual(['node', 'dist/main.js']);
    // the small young generation that keeps a streaming service's memory flat
    const env = runtime.steps
      .filter((s) => s.keyword === 'ENV')
      .map((s) => s.raw)
      .join('\n');
    expect(env).toMatch(/NODE_OPTIONS=--max-semi-space-size=8\b/);
    expect(runtime.steps.some((s) => s.keyword === 'ENTRYPOINT')).toBe(false);
  });

  it('exposes the port it sets in PORT', () => {
    const env = runtime.steps
      .filter((s) => s.keyword === 'ENV')
      .map((s) => s.raw)
      .join(' ');
    const port = /\bPORT=(\d+)/.exec(env)?.[1];
    expect(port).toBeDefined();
    expect(runtime.steps.filter((s) => s.keyword === 'EXPOSE').map((s) => s.args.trim())).toEqual([port]);
  });

  it('follows the shell rules: absolute WORKDIR [DL3000], no cd [DL3003], no sudo [DL3004], apt without recommends [DL3015], pinned global installs [DL3016], COPY not ADD [DL3020]', () => {
    for (const s of all) {
      if (s.keyword === 'WORKDIR') expect(s.args.trim()).toMatch(/^\//);
      if (s.keyword === 'ADD') throw new Error(`ADD used: ${s.raw}`);
      if (s.keyword !== 'RUN') continue;
      expect(s.raw).not.toMatch(/(^|&&|;)\s*cd\s/);
      expect(s.raw).not.toMatch(/\bsudo\b/);
      if (/apt-get install/.test(s.raw)) expect(s.raw).toMatch(/--no-install-recommends/);
      const global = /npm install (?:--global|-g)\b(.*)/.exec(s.raw);
      if (global) {
        const packages = global[1]!.split(/\s+/).filter((w) => w && !w.startsWith('-') && w !== '&&');
        for (const p of packages) expect(p.replace(/"/g, '')).toMatch(/@(\d+\.\d+\.\d+|\$\{?\w+\}?)$/);
      }
    }
    for (const [name, value] of Object.entries(globalArgs))
      expect({ name, value }).toEqual({ name, value: expect.stringMatching(/\S/) });
  });

  it('can build every service: each has a package @cp/<dir> with a build script and dist/main.js', () => {
    const services = readdirSync(join(ROOT, 'services'));
    expect(services).toEqual(expect.arrayContaining(['gateway', 'content-service']));
    for (const dir of services) {
      let pkg: { name?: string; main?: string; scripts?: Record<string, string> };
      try {
        pkg = JSON.parse(readFileSync(join(ROOT, 'services', dir, 'package.json'), 'utf8'));
      } catch {
        continue; // a service still being written has no package yet
      }
      expect({ dir, name: pkg.name, main: pkg.main, build: Boolean(pkg.scripts?.build) }).toEqual({
        dir,
        name: `@cp/${dir}`,
        main: 'dist/main.js',
        build: true,
      });
    }
  });

  it('keeps the build context small and free of secrets (deploy/Dockerfile.dockerignore)', () => {
    const ignore = readFileSync(join(ROOT, 'deploy', 'Dockerfile.dockerignore'), 'utf8')
      .split('\n')
      .map((l) => l.trim());
    for (const pattern of ['**/node_modules', '**/dist', '.git', '.local']) expect(ignore).toContain(pattern);
  });
});
