#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ContentClient, type Credentials } from '../ContentClient';
import * as errors from '../errors';
import { DEFAULT_RETRY_FOR_MS } from '../RetryPolicy';
import { parseDuration } from './duration';
import { parseCommandLine } from './args';
import type { Command, CommandContext } from './command';
import { download } from './commands/download';
import { login } from './commands/login';
import { ls } from './commands/ls';
import { receipt } from './commands/receipt';
import { refresh } from './commands/refresh';
import { rm } from './commands/rm';
import { webhook } from './commands/webhook';
import { status } from './commands/status';
import { upload } from './commands/upload';
import { defaultConfigPath, readConfig, resolveSettings, sameSettingsFlags, writeConfig } from './config';
import { progressView, type ProgressView } from './progress';
import { USAGE, UsageError } from './usage';

/** This package's version (package.json is two levels up from both src/cli and dist/cli). */
export function packageVersion(): string {
  return (JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8')) as { version: string }).version;
}

/** Every command, by the name it is run by. */
const COMMANDS = new Map<string, Command>([
  ['login', login],
  ['refresh', refresh],
  ['status', status],
  ['upload', upload],
  ['download', download],
  ['receipt', receipt],
  ['ls', ls],
  ['rm', rm],
  ['webhook', webhook],
]);

export async function run(
  argv: string[],
  env: NodeJS.ProcessEnv,
  out: NodeJS.WriteStream,
  err: NodeJS.WriteStream,
  stdin: AsyncIterable<Uint8Array> = process.stdin,
): Promise<number> {
  let parsed;
  try {
    parsed = parseCommandLine(argv);
  } catch (error) {
    err.write(`content: ${(error as Error).message}\n\n${USAGE}\n`);
    return 2;
  }
  const { values: o, positionals } = parsed;
  const [command, ...rest] = positionals;
  if (o.version) {
    out.write(o.json ? `${JSON.stringify({ version: packageVersion() })}\n` : `${packageVersion()}\n`);
    return 0;
  }
  if (o.help || !command) {
    (o.help ? out : err).write(`${USAGE}\n`);
    return o.help ? 0 : 2;
  }
  const configPath = o.config ?? defaultConfigPath(env);
  const saved = readConfig(configPath);
  const { url, owner, token } = resolveSettings(o, env, saved);
  const credentials: Credentials | null = token
    ? { kind: 'bearer', token }
    : saved.sid
      ? { kind: 'session', sid: saved.sid, refreshToken: saved.refreshToken, apiKey: saved.apiKey }
      : null;
  // A refreshed session replaces the saved one; the saved url and owner stay (a --url or
  // $CONTENT_URL of this run is not the login's).
  const save = (c: Credentials) => {
    if (c.kind === 'session')
      writeConfig(configPath, {
        ...readConfig(configPath),
        sid: c.sid,
        refreshToken: c.refreshToken,
        apiKey: c.apiKey,
      });
  };
  const retryForMs = o['retry-for'] === undefined ? DEFAULT_RETRY_FOR_MS : parseDuration(o['retry-for']);
  if (retryForMs === null) {
    err.write(
      `content: --retry-for takes a duration such as 30s, 5m or 1h, not ${JSON.stringify(o['retry-for'])}\n\n${USAGE}\n`,
    );
    return 2;
  }
  const mode = o.json ? 'none' : err.isTTY ? 'bar' : 'lines';
  // Where "waiting 4 s: service unavailable (503) ..." goes: the command's progress view, or a line of its own.
  let view: ProgressView | null = null;
  const client = new ContentClient({
    baseUrl: url,
    credentials: credentials ?? { kind: 'bearer', token: '' },
    onCredentials: save,
    retryForMs,
    proxyEnv: env,
    onRetry: (notice) => (view ?? (view = progressView(command, err, mode))).waiting(notice),
  });
  const abort = new AbortController();
  let resumeHint: string | null = null;
  const onSigint = () => abort.abort(new Interrupted());
  process.once('SIGINT', onSigint);
  const parallel = o.parallel === undefined ? 4 : Number(o.parallel);
  const context: CommandContext = {
    args: rest,
    flags: o,
    client,
    url,
    owner,
    configPath,
    parallel,
    signal: abort.signal,
    stdin,
    needOwner: () => {
      if (!owner) throw new UsageError('no owner: pass --owner <uuid> (or sign in with --owner so it is saved)');
      return owner;
    },
    needCredentials: () => {
      if (!credentials) throw new UsageError('no credentials: run `content login ...` or pass --token');
    },
    print: (human, json) => {
      // A waiting line left open (a status or refresh that waited) ends before the result.
      (view as ProgressView | null)?.stop();
      out.write(o.json ? `${JSON.stringify(json)}\n` : `${human}\n`);
    },
    progress: () => (view = progressView(command, err, mode)),
    resumeWith: (hint) => {
      resumeHint = hint + sameSettingsFlags(o);
    },
  };

  try {
    if (!Number.isInteger(parallel) || parallel < 1 || parallel > 32)
      throw new UsageError('--parallel must be a whole number from 1 to 32');
    const commandToRun = COMMANDS.get(command);
    if (!commandToRun) throw new UsageError(`unknown command ${JSON.stringify(command)}`);
    return await commandToRun(context);
  } catch (error) {
    (view as ProgressView | null)?.stop();
    return report(error, err, o.json, resumeHint);
  } finally {
    process.off('SIGINT', onSigint);
    client.close();
  }
}

class Interrupted extends Error {
  override readonly name = 'Interrupted';
  constructor() {
    super('interrupted');
  }
}

function report(error: unknown, err: NodeJS.WriteStream, json: boolean, resumeHint: string | null): number {
  const write = (code: number, what: string, todo: string, extra: Record<string, unknown> = {}) => {
    if (json) err.write(`${JSON.stringify({ error: what, hint: todo, exitCode: code, ...extra })}\n`);
    else err.write(`content: ${what}\n  ${todo}\n`);
    return code;
  };
  if (error instanceof UsageError) return write(2, error.message, 'see `content --help`');
  const local = localFileError(error);
  if (local) return write(2, local.message, 'check the file, its folder (its permissions) and the free space there');
  if (error instanceof Interrupted || (error as Error)?.name === 'AbortError') {
    return write(130, 'interrupted', resumeHint ? `resume with: ${resumeHint}` : 'run the command again');
  }
  if (error instanceof errors.RetriesExhaustedError) {
    const track = error.trackId ? ` (track id ${error.trackId})` : '';
    const again = resumeHint ? `; resume with: ${resumeHint}` : '';
    return write(
      6,
      `${error.message}${track}`,
      `the service stayed unavailable; try again later, or wait longer with --retry-for (e.g. --retry-for 10m)${again}`,
      {
        code: error.code,
        status: error.status,
        reason: error.reason,
        retriedForMs: error.retriedForMs,
        attempts: error.attempts,
        trackId: error.trackId,
      },
    );
  }
  if (error instanceof errors.ApiError) {
    const code =
      error.status === 401 || error.status === 403 ? 3 : error.status === 404 ? 4 : error.status >= 500 ? 6 : 5;
    const track = error.trackId ? ` (track id ${error.trackId})` : '';
    // An upload refused midway (a session revoked, a part refused) is still there to be resumed.
    return write(
      code,
      `${error.status} ${error.code}: ${error.message}${track}`,
      resumeHint && code !== 4 ? `${error.hint}; then resume with: ${resumeHint}` : error.hint,
      { status: error.status, code: error.code, trackId: error.trackId },
    );
  }
  // Found by the client itself (no answer said so): reported like the conflict it is.
  if (error instanceof errors.ContentStateError)
    return write(5, `${error.code}: ${error.message}`, error.hint, { code: error.code });
  if (error instanceof errors.CredentialsFileError)
    return write(
      3,
      error.message,
      'pass the certificate with --cert and its own private key with --key (PEM files, the key unencrypted)',
    );
  if (error instanceof errors.NotRefreshableError)
    return write(3, error.message, 'sign in with content login to get a session that can be refreshed');
  if (error instanceof errors.ReceiptError)
    return write(
      7,
      error.message,
      "do not rely on this receipt: check --url, and that --cert is the platform's receipt certificate",
    );
  if (error instanceof errors.IntegrityError)
    return write(
      7,
      error.message,
      'the bytes are not what they should be: run the command again (a download with --restart)',
    );
  if (error instanceof errors.TransportError)
    return write(
      6,
      error.message,
      resumeHint ? `check --url and the network; resume with: ${resumeHint}` : 'check --url and the network',
    );
  return write(1, String((error as Error)?.stack ?? error), 'this is unexpected; please report it');
}

if (require.main === module) {
  run(process.argv.slice(2), process.env, process.stdout, process.stderr).then((code) => process.exit(code));
}

/** Errors of the local file system: the file, its folder, the disk. */
const LOCAL_FILE_CODES = new Set([
  'ENOENT',
  'EACCES',
  'EPERM',
  'EROFS',
  'ENOSPC',
  'EDQUOT',
  'EISDIR',
  'ENOTDIR',
  'EEXIST',
]);

/** The local file system's error behind `error` (itself, or a cause a network error wraps), if any. */
function localFileError(error: unknown): NodeJS.ErrnoException | null {
  for (let e = error as NodeJS.ErrnoException | undefined, depth = 0; e && depth < 4; depth++) {
    if (typeof e.code === 'string' && LOCAL_FILE_CODES.has(e.code) && typeof e.syscall === 'string') return e;
    e = e.cause as NodeJS.ErrnoException | undefined;
  }
  return null;
}
