// A real Redis Sentinel (Debian's `redis-server --sentinel`) on a free loopback port, monitoring the
// test Redis under a master name of its own. It only watches: it never fails the shared Redis over
// (one Sentinel, a quorum of 1 and a `down-after` longer than any test) and never rewrites its
// configuration.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './replicas';

export interface TestSentinel {
  host: string;
  port: number;
  master: string;
  stop: () => Promise<void>;
}

export async function startSentinel(redisUrl: string): Promise<TestSentinel> {
  const redis = new URL(redisUrl);
  const port = await freePort();
  const master = `cp-test-${port}`;
  const dir = mkdtempSync(join(tmpdir(), 'cp-sentinel-'));
  const config = join(dir, 'sentinel.conf');
  writeFileSync(
    config,
    [
      `port ${port}`,
      'bind 127.0.0.1',
      `dir ${dir}`,
      `sentinel monitor ${master} ${redis.hostname} ${redis.port || 6379} 1`,
      `sentinel down-after-milliseconds ${master} 600000`,
      `sentinel failover-timeout ${master} 600000`,
      '',
    ].join('\n'),
  );
  const child = spawn('redis-server', [config, '--sentinel'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null) child.kill('SIGTERM');
    await exited;
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitForMaster(port, master);
  } catch (error) {
    await stop();
    throw new Error(`redis-sentinel did not start: ${(error as Error).message} ${stderr}`, { cause: error });
  }
  return { host: '127.0.0.1', port, master, stop };
}

/** Until the Sentinel answers SENTINEL get-master-addr-by-name with an address (a few seconds at most). */
async function waitForMaster(port: number, master: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const reply = await ask(port, `SENTINEL get-master-addr-by-name ${master}\r\n`).catch(() => '');
    if (/^\*2\r\n/.test(reply)) return;
    if (Date.now() > deadline) throw new Error(`no master address (last reply ${JSON.stringify(reply)})`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function ask(port: number, command: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = createConnection({ host: '127.0.0.1', port }, () => socket.write(command));
    let data = '';
    socket.setTimeout(1_000, () => socket.destroy(new Error('timeout')));
    socket.on('data', (chunk) => {
      data += chunk.toString();
      socket.end();
    });
    socket.on('error', reject);
    socket.on('close', () => resolve(data));
  });
}
