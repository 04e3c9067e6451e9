// A real Prometheus (Debian's package, installed by scripts/test.sh through
// deploy/checks/install-tools.sh) scrapes a stack of the four services running against an S3
// server of the test's own, with the alert rules of k8s/monitoring/rules.yaml: every rule loads
// and evaluates without an error, and BackendDown fires for S3 while that server is killed, then
// resolves once it runs again. The rules are a copy whose `for:` durations are cut to 5 s, and
// Prometheus scrapes every 2 s and evaluates every second, so that this takes seconds, not
// minutes; the expressions, labels and annotations are the shipped ones.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { ruleGroups } from '../deploy/test/support/monitoring';
import { BackingServer } from './support/privateBacking';
import { testStack } from './support/stack';

// eslint-disable-next-line @typescript-eslint/no-require-imports -- the plain-JS stack launcher
const { startStack, freePort } = require('../tools/devstack/stack') as {
  startStack: (opts: Record<string, unknown>) => Promise<{
    services: { name: string; adminUrl: string }[];
    stop: () => Promise<void>;
  }>;
  freePort: () => Promise<number>;
};

const TEST_FOR = '5s';

interface ApiRule {
  name: string;
  type: 'alerting' | 'recording';
  health: string;
  lastError?: string;
  lastEvaluation: string;
}
interface ApiAlert {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  state: 'pending' | 'firing';
}

/** Polls `check` every 500 ms until it returns something other than undefined. */
async function until<T>(what: string, timeoutMs: number, check: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

describe('a real Prometheus with the alert rules', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-prometheus-'));
  let s3: BackingServer;
  let stack: Awaited<ReturnType<typeof startStack>>;
  let prometheus: ChildProcess | undefined;
  let api: string;

  const get = async <T>(path: string): Promise<T> => {
    const res = await fetch(`${api}${path}`);
    const body = (await res.json()) as { status: string; data: T };
    if (body.status !== 'success') throw new Error(`${path}: ${JSON.stringify(body)}`);
    return body.data;
  };
  const rules = async () =>
    (await get<{ groups: { rules: ApiRule[] }[] }>('/api/v1/rules')).groups.flatMap((g) => g.rules);
  const s3Alerts = async () =>
    (await get<{ alerts: ApiAlert[] }>('/api/v1/alerts')).alerts.filter(
      (a) => a.labels.alertname === 'BackendDown' && a.labels.backend === 's3',
    );

  beforeAll(async () => {
    // No silent skip: the test command installs it (bash deploy/checks/install-tools.sh prometheus).
    if (spawnSync('prometheus', ['--version']).status !== 0)
      throw new Error(
        'prometheus is not installed: run the tests with scripts/test.sh, or bash deploy/checks/install-tools.sh prometheus',
      );
    s3 = new BackingServer('s3', await freePort(), dir);
    await s3.start();
    const prefix = `prom${Date.now().toString(36)}`;
    stack = await startStack({
      prefix,
      logDir: join(dir, 'logs'),
      keysDir: testStack().keysDir,
      env: { LOG_LEVEL: 'warn' },
      contentEnv: { S3_ENDPOINT: `http://127.0.0.1:${s3.port}` },
    });

    const groups = ruleGroups().map((g) => ({
      ...g,
      rules: g.rules.map((r) => (r.for ? { ...r, for: TEST_FOR } : r)),
    }));
    writeFileSync(join(dir, 'rules.yaml'), stringify({ groups }));
    const targets = stack.services.map((s) => new URL(s.adminUrl).host);
    writeFileSync(
      join(dir, 'prometheus.yml'),
      stringify({
        // A scrape asks each backend (up to 2 s each): 2 s leaves a loaded machine room.
        global: { scrape_interval: '2s', scrape_timeout: '2s', evaluation_interval: '1s' },
        rule_files: [join(dir, 'rules.yaml')],
        scrape_configs: [{ job_name: 'content-platform', static_configs: [{ targets }] }],
      }),
    );
    const port = await freePort();
    api = `http://127.0.0.1:${port}`;
    mkdirSync(join(dir, 'tsdb'));
    const log = openSync(join(dir, 'prometheus.log'), 'a');
    prometheus = spawn(
      'prometheus',
      [
        `--config.file=${join(dir, 'prometheus.yml')}`,
        `--storage.tsdb.path=${join(dir, 'tsdb')}`,
        `--web.listen-address=127.0.0.1:${port}`,
        '--log.level=warn',
      ],
      { stdio: ['ignore', log, log] },
    );
    closeSync(log);
    await until('Prometheus ready', 30_000, async () => ((await fetch(`${api}/-/ready`)).ok ? true : undefined)).catch(
      (error: Error) => {
        throw new Error(`${error.message}; its log: ${readFileSync(join(dir, 'prometheus.log'), 'utf8').slice(-2000)}`);
      },
    );
  }, 180_000);

  afterAll(async () => {
    if (prometheus && prometheus.exitCode === null) {
      const exited = new Promise((r) => prometheus!.once('exit', r));
      prometheus.kill('SIGTERM');
      await exited;
    }
    await stack?.stop();
    await s3?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('scrapes the four services and evaluates every rule without an error', async () => {
    const up = await until('every target scraped', 30_000, async () => {
      const { activeTargets } = await get<{ activeTargets: { health: string; scrapeUrl: string }[] }>(
        '/api/v1/targets',
      );
      return activeTargets.length === 4 && activeTargets.every((t) => t.health === 'up') ? activeTargets : undefined;
    });
    expect(up.map((t) => new URL(t.scrapeUrl).pathname)).toEqual(['/metrics', '/metrics', '/metrics', '/metrics']);
    // Evaluated at least twice (the first evaluation may come before the first scrape).
    const evaluated = await until('every rule evaluated', 30_000, async () => {
      const all = await rules();
      await new Promise((r) => setTimeout(r, 2_000));
      const again = await rules();
      return again.every((r, i) => r.lastEvaluation !== all[i]!.lastEvaluation) ? again : undefined;
    });
    const shipped = ruleGroups().flatMap((g) => g.rules);
    expect(evaluated.map((r) => r.name).sort()).toEqual(shipped.map((r) => r.alert ?? r.record).sort());
    expect(evaluated.filter((r) => r.health !== 'ok')).toEqual([]);
    // Nothing is wrong with this stack: past every `for:`, no alert fires (one would be a rule misreading it).
    await new Promise((r) => setTimeout(r, 6_000));
    const alerts = await get<{ alerts: ApiAlert[] }>('/api/v1/alerts');
    expect(alerts.alerts.filter((a) => a.state === 'firing').map((a) => a.labels)).toEqual([]);
    console.log(`Prometheus evaluates ${evaluated.length} rules over 4 targets with no error`);
  }, 90_000);

  it('fires BackendDown for S3 while the S3 server is killed, and resolves it once it is back', async () => {
    expect(await s3Alerts()).toEqual([]);
    const killedAt = Date.now();
    await s3.kill();
    const firing = await until('BackendDown firing for s3', 60_000, async () => {
      const alerts = await s3Alerts();
      return alerts.some((a) => a.state === 'firing') ? alerts : undefined;
    });
    const firedAfter = Date.now() - killedAt;
    expect(firing).toEqual([
      {
        labels: { alertname: 'BackendDown', backend: 's3', service: 'content-service', severity: 'page' },
        annotations: { summary: 'content-service cannot reach s3', runbook: 'docs/operations.md#backenddown' },
        state: 'firing',
        activeAt: expect.any(String),
        value: expect.any(String),
      },
    ]);
    const restartedAt = Date.now();
    await s3.start();
    await until('BackendDown resolved', 60_000, async () => ((await s3Alerts()).length === 0 ? true : undefined));
    console.log(
      `BackendDown for s3 fired ${(firedAfter / 1000).toFixed(1)} s after the kill (for: ${TEST_FOR}), ` +
        `resolved ${((Date.now() - restartedAt) / 1000).toFixed(1)} s after the restart`,
    );
  }, 150_000);
});
