// renovate.json: valid JSON that Renovate reads with the npm manager over the pnpm catalog, and
// whose groups hold packages the catalog really has.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { ROOT } from './support/render';

interface PackageRule {
  groupName?: string;
  matchPackageNames?: string[];
  allowedVersions?: string;
}
interface RenovateConfig {
  enabledManagers?: string[];
  npm?: { managerFilePatterns?: string[] };
  packageRules?: PackageRule[];
}

const config = JSON.parse(readFileSync(join(ROOT, 'renovate.json'), 'utf8')) as RenovateConfig;
const catalog = Object.keys(
  (parse(readFileSync(join(ROOT, 'pnpm-workspace.yaml'), 'utf8')) as { catalog: Record<string, string> }).catalog,
);

/** Renovate's `/regex/` file patterns (the only form used here). */
const fileMatches = (file: string) =>
  (config.npm?.managerFilePatterns ?? []).some((p) => new RegExp(p.replace(/^\/(.*)\/$/, '$1')).test(file));
/** Renovate's package-name patterns as used here: exact names and `scope/**`. */
const nameMatches = (pattern: string, name: string) =>
  pattern.endsWith('/**') ? name.startsWith(pattern.slice(0, -2)) : pattern === name;

describe('renovate.json', () => {
  it('updates through the npm manager, which reads the catalog in pnpm-workspace.yaml and every package.json', () => {
    expect(config.enabledManagers).toEqual(['npm']);
    expect(fileMatches('pnpm-workspace.yaml')).toBe(true);
    expect(fileMatches('package.json')).toBe(true);
    expect(fileMatches('services/gateway/package.json')).toBe(true);
    expect(catalog.length).toBeGreaterThan(10);
  });

  it('groups the packages that move together', () => {
    const groupOf = (name: string) =>
      config.packageRules?.find((r) => r.groupName && r.matchPackageNames?.some((p) => nameMatches(p, name)))
        ?.groupName;
    expect(groupOf('@aws-sdk/client-s3')).toBe('AWS SDK');
    expect(groupOf('@aws-sdk/lib-storage')).toBe('AWS SDK');
    expect(groupOf('typescript-eslint')).toBe(groupOf('eslint'));
    expect(groupOf('@swc/jest')).toBe(groupOf('jest'));
    expect(groupOf('asn1js')).toBe(groupOf('pkijs'));
    expect(groupOf('pino')).toBe('pino');
  });

  it('names in its rules only packages that some rule can meet: each rule matches a catalog entry', () => {
    for (const rule of config.packageRules ?? []) {
      const matched = catalog.filter((name) => rule.matchPackageNames?.some((p) => nameMatches(p, name)));
      expect({ rule: rule.groupName ?? rule.matchPackageNames, matched: matched.length > 0 }).toEqual({
        rule: rule.groupName ?? rule.matchPackageNames,
        matched: true,
      });
    }
  });

  it('every third-party dependency of every package.json is a catalog entry', () => {
    const manifests = ['package.json', ...readdirPackages()];
    for (const file of manifests) {
      const manifest = JSON.parse(readFileSync(join(ROOT, file), 'utf8')) as Record<
        string,
        Record<string, string> | undefined
      >;
      for (const field of ['dependencies', 'devDependencies'])
        for (const [name, spec] of Object.entries(manifest[field] ?? {})) {
          if (spec.startsWith('workspace:')) continue;
          expect({ file, name, spec, inCatalog: catalog.includes(name) }).toEqual({
            file,
            name,
            spec: 'catalog:',
            inCatalog: true,
          });
        }
    }
  });
});

function readdirPackages(): string[] {
  const workspace = parse(readFileSync(join(ROOT, 'pnpm-workspace.yaml'), 'utf8')) as { packages: string[] };
  const found: string[] = [];
  for (const pattern of workspace.packages) {
    if (pattern.endsWith('/*')) {
      const dir = pattern.slice(0, -2);
      for (const entry of readdirSync(join(ROOT, dir))) found.push(join(dir, entry, 'package.json'));
    } else found.push(join(pattern, 'package.json'));
  }
  return found.filter((f) => existsSync(join(ROOT, f)));
}
