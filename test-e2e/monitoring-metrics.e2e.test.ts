// Every metric an alert rule or a dashboard panel reads (k8s/monitoring) is one the running
// services export: a renamed metric fails here, not in an alert that can never fire.
import { dashboardExpressions, metricNames, ruleGroups, SCRAPE_METRICS } from '../deploy/test/support/monitoring';
import { testStack } from './support/stack';

// eslint-disable-next-line @typescript-eslint/no-require-imports -- the plain-JS stack launcher
const { startService } = require('../tools/devstack/stack') as {
  startService: (
    name: string,
    opts: { env: Record<string, string>; logDir: string },
  ) => Promise<{ adminUrl: string; stop: () => Promise<unknown> }>;
};

/** The metric families a service's /metrics declares (a histogram's _bucket, _count and _sum included). */
async function exported(adminUrl: string): Promise<Set<string>> {
  const text = await (await fetch(`${adminUrl}/metrics`)).text();
  const names = new Set<string>();
  for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    names.add(name!);
    if (type === 'histogram' || type === 'summary')
      for (const suffix of ['_bucket', '_count', '_sum']) names.add(`${name}${suffix}`);
  }
  return names;
}

describe('metrics of the rules and dashboard', () => {
  it('reads only metrics the services export', async () => {
    const stack = testStack();
    const all = new Set<string>();
    const admins = Object.entries(stack.services).map(([name, s]) => ({ name, adminUrl: s.adminUrl }));
    expect(admins.map((a) => a.name).sort()).toEqual(['auth-service', 'content-service', 'gateway', 'session-service']);
    for (const { adminUrl } of admins) for (const name of await exported(adminUrl)) all.add(name);
    // The rate limiter's metrics exist where rate limits are on (the test stack runs without them).
    const limited = await startService('auth-service', {
      env: { ...stack.authEnv, RATE_LIMIT_ENABLED: 'true' },
      logDir: stack.logDir,
    });
    try {
      for (const name of await exported(limited.adminUrl)) all.add(name);
    } finally {
      await limited.stop();
    }
    const used = [
      ...ruleGroups().flatMap((g) => g.rules.map((r) => ({ where: r.alert ?? r.record!, expr: r.expr }))),
      ...dashboardExpressions().map((p) => ({ where: `panel "${p.title}"`, expr: p.expr })),
    ];
    const missing = used.flatMap(({ where, expr }) =>
      metricNames(expr)
        .filter((name) => !all.has(name) && !SCRAPE_METRICS.has(name))
        .map((name) => `${name} (${where})`),
    );
    console.log(
      `${used.length} expressions read ${new Set(used.flatMap((u) => metricNames(u.expr))).size} metrics of ${all.size} exported`,
    );
    expect(missing).toEqual([]);
  });
});
