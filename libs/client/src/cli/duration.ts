/**
 * A duration as people write it on a command line: `30s`, `5m`, `1h`, `2m30s`, `500ms`, or a bare
 * number of seconds. Returns milliseconds, or null when it is not one.
 */
export function parseDuration(text: string): number | null {
  const t = text.trim().toLowerCase();
  if (/^\d+(\.\d+)?$/.test(t)) return Math.round(Number(t) * 1000);
  if (!/^(\d+(\.\d+)?(ms|h|m|s))+$/.test(t)) return null;
  const unit: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
  let ms = 0;
  for (const m of t.matchAll(/(\d+(?:\.\d+)?)(ms|h|m|s)/g)) ms += Number(m[1]) * unit[m[2]!]!;
  return Math.round(ms);
}
