import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';

/** What `content login` remembers between runs (mode 0600: it holds a live session). */
export interface SavedConfig {
  url?: string;
  owner?: string;
  sid?: string;
  refreshToken?: string;
  apiKey?: string;
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

export function writeConfig(path: string, config: SavedConfig): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  writeFileSync(path, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
}
