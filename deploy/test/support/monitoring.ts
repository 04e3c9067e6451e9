// What the alert rules and the dashboard (k8s/monitoring) ask of the metrics: their expressions,
// and the metric names in them.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';

const ROOT = join(__dirname, '..', '..', '..');
export const MONITORING_DIR = join(ROOT, 'k8s', 'monitoring');

export interface Rule {
  record?: string;
  alert?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
export interface RuleGroup {
  name: string;
  rules: Rule[];
}

export function ruleGroups(): RuleGroup[] {
  return (parse(readFileSync(join(MONITORING_DIR, 'rules.yaml'), 'utf8')) as { groups: RuleGroup[] }).groups;
}

export function dashboardExpressions(): { title: string; expr: string }[] {
  const dashboard = JSON.parse(readFileSync(join(MONITORING_DIR, 'dashboard.json'), 'utf8')) as {
    panels: { title: string; targets: { expr: string }[] }[];
  };
  return dashboard.panels.flatMap((p) => p.targets.map((t) => ({ title: p.title, expr: t.expr })));
}

/** PromQL's own words (functions, aggregations, keywords): never metric names. */
const PROMQL_WORDS = new Set(
  (
    'sum min max avg count stddev stdvar topk bottomk quantile count_values group by without on ignoring ' +
    'group_left group_right bool and or unless offset rate irate increase delta idelta deriv predict_linear ' +
    'histogram_quantile time vector scalar abs absent absent_over_time clamp clamp_min clamp_max ceil floor ' +
    'round label_replace label_join sort sort_desc timestamp changes resets avg_over_time max_over_time ' +
    'min_over_time sum_over_time count_over_time last_over_time humanize inf nan'
  ).split(' '),
);

/**
 * The metric names an expression reads: label matchers, strings, ranges, grouping clauses and
 * numbers removed; recording rules' names (with a colon) and PromQL's words left out.
 */
export function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ')
    .replace(/\boffset\s+\w+/g, ' ');
  const names = new Set<string>();
  for (const [token] of bare.matchAll(/[A-Za-z_:][A-Za-z0-9_:]*/g)) {
    if (token.includes(':') || PROMQL_WORDS.has(token) || /^\d/.test(token) || /^e\d+$/.test(token)) continue;
    names.add(token);
  }
  return [...names];
}

/** Names Prometheus itself gives every target, not the services. */
export const SCRAPE_METRICS = new Set(['up', 'scrape_duration_seconds', 'scrape_samples_scraped']);
