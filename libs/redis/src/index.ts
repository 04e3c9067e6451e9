import { createHash } from 'node:crypto';
import {
  createClient,
  createSentinel,
  defineScript,
  type CommandParser,
  type RedisClientType,
  type RedisScripts,
  type RedisSentinelType,
} from 'redis';
import type { Logger } from '@cp/logging';

export type { RedisScripts };

/** A Lua script over one key with string arguments and a string reply (see keyScript). */
export interface KeyScript {
  SCRIPT: string;
  NUMBER_OF_KEYS: number;
  SHA1: string;
  parseCommand(this: void, parser: CommandParser, key: string, ...args: string[]): void;
  transformReply: () => string;
}

/**
 * A Lua script for connectRedis's `scripts`: the connection calls it by SHA-1 (EVALSHA) and sends
 * the source (EVAL) only when the server does not have it yet (after a restart or a failover).
 */
export function keyScript(source: string): KeyScript {
  return defineScript<Omit<KeyScript, 'SHA1'>>({
    SCRIPT: source,
    NUMBER_OF_KEYS: 1,
    parseCommand(parser: CommandParser, key: string, ...args: string[]) {
      parser.pushKey(key);
      parser.push(...args);
    },
    transformReply: undefined as unknown as () => string, // the reply as Redis sends it
  });
}

/**
 * A connection to one Redis master: a plain client (REDIS_URL) or one that Sentinel keeps
 * pointed at the current master (REDIS_SENTINELS). Both answer the same typed commands, and the
 * Lua scripts given to connectRedis as methods (EVALSHA, EVAL once when the server lacks it).
 */
export type Redis<S extends RedisScripts = None> =
  RedisClientType<None, None, S, 3, None> | RedisSentinelType<None, None, S, 3, None>;

/** No modules, functions, scripts or type mapping. */
export type None = Record<never, never>;

/** Where the master is: a redis:// or rediss:// URL, or Sentinel. */
export type RedisTarget = string | SentinelTarget;

export interface SentinelTarget {
  /** Sentinels to ask (any one that answers tells the others and the master). */
  sentinels: { host: string; port: number }[];
  /** The master's name in the Sentinels' configuration (`sentinel monitor <name> ...`). */
  master: string;
  /** The service's ACL user on the master (and its replicas). */
  username?: string;
  password?: string;
  /** For Sentinels started with `requirepass`. */
  sentinelPassword?: string;
}

/** Raised when Redis does not answer in time or is not connected. */
export class RedisUnavailable extends Error {
  override readonly name = 'RedisUnavailable';
  readonly code = 'CP_ERR_REDIS_UNAVAILABLE';
}

export interface RedisOptions<S extends RedisScripts> {
  /** How long one command may wait for its answer (a hung Redis); default 1 s. */
  commandTimeoutMs?: number;
  /** Lua scripts (defineScript), called by name on the connection. */
  scripts?: S;
}

const commandTimeouts = new WeakMap<object, number>();
const sentinels = new WeakSet<object>();

const RETRY_MS = 2_000;
/**
 * Commands one connection holds, sent or waiting to be: past it a command fails at once (a hung
 * Redis answers nothing while requests keep coming; each waits redisCall's deadline, the queue
 * would not).
 */
const QUEUE_MAX = 5_000;
const reconnectStrategy = (retries: number) => Math.min(100 * 2 ** retries, RETRY_MS);

/**
 * Connects in the background and fails fast instead of queueing commands while disconnected, so
 * a request never waits on a dead Redis: callers decide to go to MongoDB or answer 503.
 */
export function connectRedis<S extends RedisScripts = None>(
  target: RedisTarget,
  logger: Logger,
  options: RedisOptions<S> = {},
): Redis<S> {
  const timeout = options.commandTimeoutMs ?? 1_000;
  const socket = { connectTimeout: 2_000, reconnectStrategy };
  // RESP3 is node-redis 6's default; Enterprise maintenance notices would need CLIENT rights the ACL users lack.
  // No per-command timeout in node-redis: redisCall bounds every wait itself, and node-redis's
  // (an AbortSignal.timeout per command, covering only commands not yet written) fired for every
  // command a second after it, building a DOMException each time (2.3% of the session-service's
  // CPU under sid lookups). What a hung Redis leaves queued is bounded by the queue's length instead.
  const common = {
    RESP: 3 as const,
    scripts: options.scripts,
    commandsQueueMaxLength: QUEUE_MAX,
    maintNotifications: 'disabled' as const,
  };
  let warned = false;
  const onError = (error: unknown) => {
    if (!warned) logger.warn({ err: error instanceof Error ? error.message : String(error) }, 'redis unavailable');
    warned = true;
  };
  const onReady = () => {
    if (warned) logger.info('redis available again');
    warned = false;
  };

  let client: Redis<S>;
  if (typeof target === 'string') {
    const plain = createClient({ ...common, url: target, disableOfflineQueue: true, socket });
    plain.on('error', onError).on('ready', onReady);
    plain.connect().catch(() => undefined); // keeps retrying in the background
    client = plain as unknown as Redis<S>;
  } else {
    const sentinel = createSentinel({
      ...common,
      name: target.master,
      sentinelRootNodes: target.sentinels,
      nodeClientOptions: {
        username: target.username,
        password: target.password,
        disableOfflineQueue: true,
        commandsQueueMaxLength: QUEUE_MAX,
        socket,
        maintNotifications: 'disabled',
      },
      sentinelClientOptions: { password: target.sentinelPassword, socket, maintNotifications: 'disabled' },
      passthroughClientErrorEvents: true,
    });
    sentinel.on('error', onError).on('ready', onReady);
    // The first connect gives up after a while without a Sentinel or a master; keep trying, like a plain client.
    const connect = (): void => {
      sentinel.connect().catch((error: unknown) => {
        onError(error);
        if (!closing.has(sentinel)) setTimeout(connect, RETRY_MS).unref();
      });
    };
    connect();
    sentinels.add(sentinel);
    client = sentinel as unknown as Redis<S>;
  }
  commandTimeouts.set(client, timeout);
  return client;
}

const closing = new WeakSet<object>();

/**
 * Runs typed commands with a deadline (the connection's `commandTimeoutMs`); any failure becomes
 * RedisUnavailable. `redisCall(redis, (r) => r.get(key))`.
 */
export async function redisCall<S extends RedisScripts, T>(
  client: Redis<S>,
  run: (redis: Redis<S>) => Promise<T>,
  timeoutMs = commandTimeouts.get(client) ?? 1_000,
): Promise<T> {
  if (!client.isReady) throw new RedisUnavailable('redis is not connected');
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      run(client),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new RedisUnavailable('redis did not answer in time')), timeoutMs);
      }),
    ]);
  } catch (error) {
    if (error instanceof RedisUnavailable) throw error;
    throw new RedisUnavailable(`redis command failed: ${(error as Error).message}`, { cause: error });
  } finally {
    clearTimeout(timer);
  }
}

/** One raw command (`['ACL', 'WHOAMI']`), with redisCall's deadline and errors; for what has no typed method. */
export function redisCommand<T = unknown, S extends RedisScripts = None>(
  client: Redis<S>,
  args: string[],
  timeoutMs?: number,
): Promise<T> {
  return redisCall(
    client,
    (c) =>
      (sentinels.has(c)
        ? (c as RedisSentinelType).sendCommand(false, args)
        : (c as RedisClientType).sendCommand(args)) as Promise<T>,
    timeoutMs,
  );
}

/**
 * Closes a connection at shutdown: politely when connected (within a deadline), at once
 * otherwise. A polite close of a client that is still trying to reconnect never resolves, which
 * held a service's shutdown open while Redis was down.
 */
export async function closeRedis<S extends RedisScripts>(client: Redis<S>, timeoutMs = 2_000): Promise<void> {
  closing.add(client);
  if (client.isReady) {
    let timer: NodeJS.Timeout | undefined;
    const closed = await Promise.race([
      client.close().then(
        () => true,
        () => false,
      ),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs))),
    ]);
    clearTimeout(timer);
    if (closed) return;
  }
  if (client.isOpen || sentinels.has(client)) await Promise.resolve(client.destroy()).catch(() => undefined);
}

/**
 * A service's Redis as a backing server of its start-up (service-kit's Backend): the check of
 * /healthz/deps, a PING within the command timeout, and how the client closes at shutdown.
 */
export function redisBackend<S extends RedisScripts>(client: Redis<S>) {
  return {
    readiness: { name: 'redis', check: async () => void (await redisCommand(client, ['PING'])) },
    close: () => closeRedis(client),
  };
}

/** A Lua script run by SHA-1 over any number of keys (see runScript). */
export interface LuaScript {
  source: string;
  sha: string;
}

export function luaScript(source: string): LuaScript {
  return { source, sha: createHash('sha1').update(source).digest('hex') };
}

/** EVALSHA with its keys and arguments, and EVAL once when the server does not have the script (after a restart or a failover). */
export async function runScript<T = unknown, S extends RedisScripts = None>(
  client: Redis<S>,
  script: LuaScript,
  keys: string[],
  args: string[],
): Promise<T> {
  const tail = [String(keys.length), ...keys, ...args];
  try {
    return await redisCommand<T, S>(client, ['EVALSHA', script.sha, ...tail]);
  } catch (error) {
    if (!/NOSCRIPT/.test((error as Error).message)) throw error;
    return redisCommand<T, S>(client, ['EVAL', script.source, ...tail]);
  }
}

/** Waits until the connection is ready, at most `timeoutMs`; false when it is not by then. */
export function redisReady<S extends RedisScripts>(client: Redis<S>, timeoutMs: number): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    if (client.isReady) return resolve(true);
    const timer = setTimeout(() => resolve(false), timeoutMs);
    client.once('ready', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}
