import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';

export const ROOT = join(__dirname, '..', '..', '..');
const TOOLS_DIR = process.env.CP_TOOLS_DIR ?? join(homedir(), '.cache', 'content-platform', 'bin');

/** A Kubernetes object as rendered; the tests read it field by field. */
export type K8sObject = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- arbitrary Kubernetes objects
  [field: string]: any;
};

function onPath(bin: string): string | null {
  for (const dir of [...(process.env.PATH ?? '').split(':'), TOOLS_DIR]) {
    if (dir && existsSync(join(dir, bin))) return join(dir, bin);
  }
  return null;
}

/** `kubectl kustomize <dir>`, or `kustomize build <dir>` where kubectl is missing (deploy/checks/install-tools.sh builds it). */
export function renderKustomization(dir: string): K8sObject[] {
  const kubectl = onPath('kubectl');
  const kustomize = onPath('kustomize');
  const [bin, args] = kubectl ? [kubectl, ['kustomize', dir]] : kustomize ? [kustomize, ['build', dir]] : [null, []];
  if (!bin)
    throw new Error(
      `neither kubectl nor kustomize found on PATH or in ${TOOLS_DIR}: run deploy/checks/install-tools.sh`,
    );
  const text = execFileSync(bin, args, { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  return parseAllDocuments(text)
    .map((doc) => doc.toJS() as K8sObject | null)
    .filter((o): o is K8sObject => o !== null);
}

/** A Gateway API duration (GEP-2257: `24h`, `1h30m`, `500ms`, `0s`) in seconds. */
export function gatewayDuration(value: string): number {
  if (!/^([0-9]{1,5}(h|m|s|ms)){1,4}$/.test(value)) throw new Error(`not a Gateway API duration: ${value}`);
  const unit = { h: 3600, m: 60, s: 1, ms: 0.001 } as const;
  return [...value.matchAll(/(\d+)(h|ms|m|s)/g)].reduce(
    (sum, [, n, u]) => sum + Number(n) * unit[u as keyof typeof unit],
    0,
  );
}
