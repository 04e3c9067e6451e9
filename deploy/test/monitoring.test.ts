// The alert rules and the dashboard as code (k8s/monitoring, k8s/base/prometheus-rule.yaml): the
// PrometheusRule holds the same groups as the plain rules file, promtool accepts them and their
// unit tests (one per alert) pass, every alert has its runbook in docs/operations.md, and every
// expression is parsed for the metric names test-e2e/monitoring-metrics checks against the services.
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { dashboardExpressions, metricNames, MONITORING_DIR, ruleGroups } from './support/monitoring';
import { ROOT } from './support/render';

const promtool = spawnSync('promtool', ['--version']).status === 0;
// deploy/checks/run.sh installs promtool (Debian's prometheus package) and sets this: there it must not skip.
const required = process.env.CP_REQUIRE_PROMTOOL === '1';
const withPromtool = promtool || required ? it : it.skip;
if (!promtool && !required)
  console.warn('promtool not found: rule checks skipped (bash deploy/checks/install-tools.sh installs it)');

describe('alert rules and dashboard', () => {
  const groups = ruleGroups();
  const alerts = groups.flatMap((g) => g.rules).filter((r) => r.alert);

  it('ships the same groups as a PrometheusRule in the base', () => {
    const rule = parse(readFileSync(join(ROOT, 'k8s', 'base', 'prometheus-rule.yaml'), 'utf8')) as {
      kind: string;
      spec: { groups: unknown };
    };
    expect(rule.kind).toBe('PrometheusRule');
    expect(rule.spec.groups).toEqual(groups);
    const kustomization = readFileSync(join(ROOT, 'k8s', 'base', 'kustomization.yaml'), 'utf8');
    expect(kustomization).toMatch(/^\s+- prometheus-rule\.yaml$/m);
  });

  withPromtool('passes promtool check rules', () => {
    const out = execFileSync('promtool', ['check', 'rules', join(MONITORING_DIR, 'rules.yaml')], { encoding: 'utf8' });
    expect(out).toMatch(/SUCCESS: \d+ rules found/);
  });

  withPromtool("passes promtool's unit tests, which fire every alert", () => {
    const tests = parse(readFileSync(join(MONITORING_DIR, 'rules.test.yaml'), 'utf8')) as {
      tests: { alert_rule_test?: { alertname: string; exp_alerts?: unknown[] }[] }[];
    };
    const fired = new Set(
      tests.tests.flatMap((t) => (t.alert_rule_test ?? []).filter((a) => a.exp_alerts?.length).map((a) => a.alertname)),
    );
    expect(alerts.map((a) => a.alert).filter((name) => !fired.has(name!))).toEqual([]);
    const run = spawnSync('promtool', ['test', 'rules', 'rules.test.yaml'], { cwd: MONITORING_DIR, encoding: 'utf8' });
    expect(`${run.stdout}${run.stderr}`).toMatch(/SUCCESS/);
    expect(run.status).toBe(0);
  });

  it('gives every alert a severity and a runbook section in docs/operations.md', () => {
    const operations = readFileSync(join(ROOT, 'docs', 'operations.md'), 'utf8');
    const headings = new Set(
      [...operations.matchAll(/^#{2,4} (.+)$/gm)].map((m) =>
        m[1]!
          .toLowerCase()
          .replace(/[^a-z0-9 -]/g, '')
          .replace(/ /g, '-'),
      ),
    );
    for (const alert of alerts) {
      expect({ alert: alert.alert, severity: alert.labels?.severity }).toEqual({
        alert: alert.alert,
        severity: expect.stringMatching(/^(page|ticket)$/),
      });
      expect(alert.annotations?.runbook).toBe(`docs/operations.md#${alert.alert!.toLowerCase()}`);
      expect({ alert: alert.alert, documented: headings.has(alert.alert!.toLowerCase()) }).toEqual({
        alert: alert.alert,
        documented: true,
      });
    }
  });

  it('reads metric names out of every rule and panel', () => {
    expect(
      metricNames('sum by (route) (rate(http_request_duration_seconds_count{status=~"5.."}[5m])) / x:y:z'),
    ).toEqual(['http_request_duration_seconds_count']);
    const panels = dashboardExpressions();
    expect(panels.length).toBeGreaterThanOrEqual(10);
    for (const { title, expr } of [
      ...panels,
      ...groups.flatMap((g) => g.rules).map((r) => ({ title: r.alert ?? r.record, expr: r.expr })),
    ])
      expect({ title, names: metricNames(expr).length > 0 || /:/.test(expr) }).toEqual({ title, names: true });
  });
});
