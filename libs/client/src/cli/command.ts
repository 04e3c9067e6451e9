import type { ContentClient } from '../ContentClient';
import type { Flags } from './args';
import type { ProgressView } from './progress';

/** What a command runs with: main.ts has weighed the flags, the environment and the saved login. */
export interface CommandContext {
  /** The positionals after the command's name. */
  args: string[];
  flags: Flags;
  client: ContentClient;
  /** The gateway and the owner as resolved (flag, environment, saved login, default). */
  url: string;
  owner: string | undefined;
  /** Where the login is saved. */
  configPath: string;
  /** --parallel, checked: 1 to 32. */
  parallel: number;
  /** Aborted by Ctrl-C. */
  signal: AbortSignal;
  stdin: AsyncIterable<Uint8Array>;
  /** The owner, or a UsageError that says how to give one. */
  needOwner(): string;
  /** Nothing, or a UsageError when there are neither a saved session nor a token. */
  needCredentials(): void;
  /** The result on stdout: the human line, or with --json the JSON value. */
  print(human: string, json: unknown): void;
  /** The command's progress on stderr; it also shows the waits for retries from then on. */
  progress(): ProgressView;
  /** What to run to go on after an interruption (printed with the error). */
  resumeWith(hint: string): void;
}

/** A command of `content`: its exit code when it succeeds (0); failures are thrown and reported by main.ts. */
export type Command = (context: CommandContext) => Promise<number>;
