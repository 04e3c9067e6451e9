// What a service process of the test stack has used so far, read from /proc (Linux): CPU time
// (user + system) and resident memory, to show a request did not leave it spinning or growing.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

let ticksPerSecond: number | undefined;

export interface ProcessUsage {
  cpuMs: number;
  rssBytes: number;
}

export function processUsage(pid: number): ProcessUsage {
  ticksPerSecond ??= Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces) start at state: utime is field 14, stime 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const cpuTicks = Number(fields[11]) + Number(fields[12]);
  const rss = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return { cpuMs: (cpuTicks * 1000) / ticksPerSecond, rssBytes: Number(rss?.[1] ?? 0) * 1024 };
}

/** CPU time the process used during `ms` of wall time. */
export async function cpuDuring(pid: number, ms: number): Promise<number> {
  const before = processUsage(pid).cpuMs;
  await new Promise((r) => setTimeout(r, ms));
  return processUsage(pid).cpuMs - before;
}
