// The `content` command line as a user runs it (the built libs/client), for the client e2e tests.
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

export const CONTENT_CLI = join(__dirname, '..', '..', 'libs', 'client', 'dist', 'cli', 'main.js');

export interface CliRun {
  child: ChildProcess;
  /** Resolves when the process exits. */
  done: Promise<{ code: number; stdout: string; stderr: string }>;
  /** Resolves once stderr contains a line matching `pattern`. */
  stderrMatches(pattern: RegExp): Promise<string>;
}

/** The proxy variables, unset: tests against 127.0.0.1 must not go through a proxy of the machine's. */
export const NO_PROXY_VARS = {
  HTTP_PROXY: '',
  http_proxy: '',
  HTTPS_PROXY: '',
  https_proxy: '',
  NO_PROXY: '',
  no_proxy: '',
};

/** Starts `content ...`; `stdin` is piped in when given. */
export function startCli(args: string[], opts: { env?: NodeJS.ProcessEnv; stdin?: Buffer } = {}): CliRun {
  const child = spawn(process.execPath, [CONTENT_CLI, ...args], {
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { ...process.env, ...NO_PROXY_VARS, CONTENT_TOKEN: '', ...opts.env },
  });
  let stdout = '';
  let stderr = '';
  const waiters: { pattern: RegExp; resolve: (s: string) => void }[] = [];
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => {
    stderr += d.toString();
    for (const w of waiters.splice(0)) {
      const m = w.pattern.exec(stderr);
      if (m) w.resolve(m[0]);
      else waiters.push(w);
    }
  });
  child.stdin!.on('error', () => undefined);
  if (opts.stdin) child.stdin!.end(opts.stdin);
  else child.stdin!.end();
  const done = new Promise<{ code: number; stdout: string; stderr: string }>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
  return {
    child,
    done,
    stderrMatches: (pattern) =>
      new Promise<string>((resolve, reject) => {
        const m = pattern.exec(stderr);
        if (m) return resolve(m[0]);
        waiters.push({ pattern, resolve });
        void done.then(() => reject(new Error(`exited before stderr matched ${pattern}: ${stderr}`)));
      }),
  };
}

export function cli(
  args: string[],
  opts: { env?: NodeJS.ProcessEnv; stdin?: Buffer } = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  return startCli(args, opts).done;
}
