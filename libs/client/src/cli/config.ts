import { randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, dirname, join } from 'node:path';

/** What `content login` remembers between runs (mode 0600: it holds a live session). */
export interface SavedConfig {
  url?: string;
  owner?: string;
  sid?: string;
  refreshToken?: string;
  apiKey?: string;
}

/** The command line's options that also have an environment variable or a saved value. */
export interface SettingFlags {
  url?: string;
  owner?: string;
  token?: string;
}

/** What a command runs with, once flags, environment, saved login and defaults are weighed. */
export interface Settings {
  url: string;
  owner: string | undefined;
  /** A Bearer token (`--token` or `$CONTENT_TOKEN`): it goes before the saved session. */
  token: string | undefined;
}

export const DEFAULT_URL = 'http://127.0.0.1:8080';

/**
 * Flags beat environment variables, which beat the saved login, which beats the defaults: a
 * variable set for one shell or one CI job (`CONTENT_URL=... content upload`) must not be
 * overridden by what a `content login` wrote to disk weeks ago. An empty variable counts as unset.
 */
export function resolveSettings(flags: SettingFlags, env: NodeJS.ProcessEnv, saved: SavedConfig): Settings {
  const pick = (...values: (string | undefined)[]) => values.find((v) => v !== undefined && v !== '');
  return {
    url: pick(flags.url, env.CONTENT_URL, saved.url) ?? DEFAULT_URL,
    owner: pick(flags.owner, env.CONTENT_OWNER, saved.owner),
    token: pick(flags.token, env.CONTENT_TOKEN),
  };
}

/**
 * The flags a command given again (a resume hint) needs to reach the same content as this run:
 * the --url, --owner and --config it was given, and --token as a placeholder (a secret is never printed).
 */
export function sameSettingsFlags(flags: SettingFlags & { config?: string }): string {
  const given: [string, string | undefined][] = [
    ['--url', flags.url],
    ['--owner', flags.owner],
    ['--config', flags.config],
    ['--token', flags.token === undefined ? undefined : '<token>'],
  ];
  return given.map(([name, value]) => (value === undefined ? '' : ` ${name} ${value}`)).join('');
}

export function defaultConfigPath(env: NodeJS.ProcessEnv): string {
  const base = env.XDG_CONFIG_HOME || join(homedir(), '.config');
  return join(base, 'content-platform', 'config.json');
}

export function readConfig(path: string): SavedConfig {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as SavedConfig;
  } catch {
    return {};
  }
}

/**
 * Replaces the config file atomically: the JSON goes to a new file beside it (same directory, so
 * same file system), created with mode 0600, flushed to disk, then renamed over the old one. A
 * crash or a full disk mid-write leaves the old file whole (and at worst a stray `.tmp` file);
 * the config file itself is never opened for writing. A directory it creates gets mode 0700.
 */
export function writeConfig(path: string, config: SavedConfig): void {
  const dir = dirname(path);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const temp = join(dir, `.${basename(path)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  const data = Buffer.from(`${JSON.stringify(config, null, 2)}\n`);
  let fd: number | null = openSync(temp, 'wx', 0o600);
  try {
    for (let at = 0; at < data.length;) at += writeSync(fd, data, at, data.length - at);
    fsyncSync(fd);
    closeSync(fd);
    fd = null;
    renameSync(temp, path);
  } catch (error) {
    if (fd !== null) closeSync(fd);
    rmSync(temp, { force: true });
    throw error;
  }
  syncDirectory(dir);
}

/** Makes the rename itself durable (where directories can be opened: not on Windows). */
function syncDirectory(dir: string): void {
  let fd: number | null = null;
  try {
    fd = openSync(dir, 'r');
    fsyncSync(fd);
  } catch {
    /* best effort */
  } finally {
    if (fd !== null) closeSync(fd);
  }
}
