// Backing servers of a test's own (S3, MongoDB-compatible, Redis), each a child process the test
// may stop (SIGSTOP: a hang), resume, kill (SIGKILL: refused connections) and start again on the
// same port with the same data dir. Never the shared servers other tests use.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readdirSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { homedir } from 'node:os';
import { join } from 'node:path';

const TOOLS = process.env.CP_TOOLS_DIR ?? join(homedir(), '.cache', 'content-platform', 'bin');
export const S3_ACCESS_KEY = 'localdev';
export const S3_SECRET_KEY = 'localdev-secret';

export type BackingName = 's3' | 'mongodb' | 'redis';

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** One server process on a fixed port; start() again after kill() reuses port and data dir. */
export class BackingServer {
  private child: ChildProcess | null = null;

  constructor(
    readonly name: BackingName,
    readonly port: number,
    private readonly dir: string,
  ) {}

  private command(): { cmd: string; args: string[]; env: NodeJS.ProcessEnv } {
    const data = join(this.dir, this.name);
    mkdirSync(data, { recursive: true });
    switch (this.name) {
      case 's3':
        return {
          cmd: join(TOOLS, 'versitygw'),
          args: ['--port', `127.0.0.1:${this.port}`, '--quiet', '--keep-alive', 'posix', data],
          env: { ...process.env, ROOT_ACCESS_KEY: S3_ACCESS_KEY, ROOT_SECRET_KEY: S3_SECRET_KEY },
        };
      case 'mongodb':
        return {
          cmd: join(TOOLS, 'ferretdb'),
          args: [
            '--handler=sqlite',
            `--sqlite-url=file:${data}/?_pragma=synchronous(normal)`,
            `--listen-addr=127.0.0.1:${this.port}`,
            '--state-dir=-',
            '--debug-addr=-',
            '--telemetry=disable',
            '--log-level=warn',
          ],
          env: process.env,
        };
      case 'redis':
        // Persisted on every write, so a kill loses nothing that was acknowledged (as with a managed Redis).
        return {
          cmd: 'redis-server',
          args: [
            '--bind',
            '127.0.0.1',
            '--port',
            String(this.port),
            '--save',
            '',
            '--appendonly',
            'yes',
            '--appendfsync',
            'always',
            '--dir',
            data,
          ],
          env: process.env,
        };
    }
  }

  async start(): Promise<void> {
    const { cmd, args, env } = this.command();
    const out = openSync(join(this.dir, `${this.name}.log`), 'a');
    this.child = spawn(cmd, args, { env, stdio: ['ignore', out, out] });
    closeSync(out);
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      if (this.child.exitCode !== null)
        throw new Error(`${this.name} exited with ${this.child.exitCode}; see ${this.dir}/${this.name}.log`);
      if (await portOpen(this.port)) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`${this.name} did not open port ${this.port}`);
  }

  /** SIGSTOP: the port still accepts connections, nothing answers. Resolves once every thread is stopped. */
  async pause(): Promise<void> {
    const pid = this.child?.pid;
    this.child?.kill('SIGSTOP');
    if (!pid) return;
    const deadline = Date.now() + 2_000;
    while (Date.now() < deadline) {
      const states = readdirSync(`/proc/${pid}/task`).map(
        (t) => /State:\s+(\S)/.exec(readFileSync(`/proc/${pid}/task/${t}/status`, 'utf8'))?.[1],
      );
      if (states.every((st) => st === 'T')) return;
      await new Promise((r) => setTimeout(r, 10));
    }
    throw new Error(`${this.name} (pid ${pid}) did not stop`);
  }

  resume(): void {
    this.child?.kill('SIGCONT');
  }

  /** SIGKILL and wait for the exit: the port refuses connections. */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGCONT'); // a stopped process dies on SIGKILL too, but its exit is reported sooner
    child.kill('SIGKILL');
    await exited;
  }

  /** Stops it for good (end of the test). */
  async stop(): Promise<void> {
    await this.kill();
    this.child = null;
  }
}

export interface PrivateBacking {
  servers: Record<BackingName, BackingServer>;
  /** The backing variables tools/devstack/stack.js takes, pointing at these servers. */
  env: {
    S3_ENDPOINT: string;
    S3_ACCESS_KEY_ID: string;
    S3_SECRET_ACCESS_KEY: string;
    MONGODB_URL: string;
    REDIS_URL: string;
  };
  stop: () => Promise<void>;
}

/** Starts the three servers on the given free ports, data under `dir`. */
export async function startPrivateBacking(dir: string, ports: Record<BackingName, number>): Promise<PrivateBacking> {
  const servers = {
    s3: new BackingServer('s3', ports.s3, dir),
    mongodb: new BackingServer('mongodb', ports.mongodb, dir),
    redis: new BackingServer('redis', ports.redis, dir),
  };
  const stop = async () => {
    await Promise.all(Object.values(servers).map((s) => s.stop()));
  };
  try {
    await Promise.all(Object.values(servers).map((s) => s.start()));
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    servers,
    env: {
      S3_ENDPOINT: `http://127.0.0.1:${ports.s3}`,
      S3_ACCESS_KEY_ID: S3_ACCESS_KEY,
      S3_SECRET_ACCESS_KEY: S3_SECRET_KEY,
      MONGODB_URL: `mongodb://127.0.0.1:${ports.mongodb}/`,
      REDIS_URL: `redis://127.0.0.1:${ports.redis}`,
    },
    stop,
  };
}
