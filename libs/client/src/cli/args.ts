import { parseArgs } from 'node:util';

// Every flag of every command: a flag a command does not read is accepted and ignored.
const OPTIONS = {
  url: { type: 'string' },
  owner: { type: 'string' },
  token: { type: 'string' },
  json: { type: 'boolean', default: false },
  config: { type: 'string' },
  cert: { type: 'string' },
  key: { type: 'string' },
  'api-key': { type: 'string' },
  resume: { type: 'string' },
  parallel: { type: 'string' },
  'content-type': { type: 'string' },
  sha256: { type: 'string' },
  out: { type: 'string' },
  size: { type: 'string' },
  restart: { type: 'boolean', default: false },
  direct: { type: 'boolean', default: false },
  limit: { type: 'string' },
  events: { type: 'string' },
  all: { type: 'boolean', default: false },
  'retry-for': { type: 'string' },
  help: { type: 'boolean', short: 'h', default: false },
  version: { type: 'boolean', short: 'V', default: false },
} as const;

/** Reads the command line: the flags, and the positionals (the command and its arguments). Throws on an unknown flag. */
export function parseCommandLine(argv: string[]) {
  return parseArgs({ args: argv, allowPositionals: true, options: OPTIONS });
}

export type Flags = ReturnType<typeof parseCommandLine>['values'];
