import { createClient } from 'redis';
import type { Logger } from '@cp/logging';

export type Redis = ReturnType<typeof createClient>;

/** Raised when Redis does not answer in time or is not connected. */
export class RedisUnavailable extends Error {
  override readonly name = 'RedisUnavailable';
}

export interface RedisOptions {
  /** How long one command may wait for its answer (a hung Redis); default 1 s. */
  commandTimeoutMs?: number;
}

const commandTimeouts = new WeakMap<Redis, number>();

/**
 * A Redis client that fails fast instead of queueing commands while disconnected, so a request
 * never waits on a dead Redis: callers decide to go to MongoDB or answer 503.
 */
export function connectRedis(url: string, logger: Logger, options: RedisOptions = {}): Redis {
  const client = createClient({
    url,
    disableOfflineQueue: true,
    socket: { connectTimeout: 2_000, reconnectStrategy: (retries: number) => Math.min(100 * 2 ** retries, 2_000) },
  });
  if (options.commandTimeoutMs !== undefined) commandTimeouts.set(client, options.commandTimeoutMs);
  let warned = false;
  client.on('error', (error: Error) => {
    if (!warned) logger.warn({ err: error.message }, 'redis unavailable');
    warned = true;
  });
  client.on('ready', () => {
    if (warned) logger.info('redis available again');
    warned = false;
  });
  client.connect().catch(() => undefined); // keeps retrying in the background
  return client;
}

/** Sends one raw command with a deadline (the client's `commandTimeoutMs`); any failure becomes RedisUnavailable. */
export async function redisCommand<T = unknown>(client: Redis, args: string[], timeoutMs = commandTimeouts.get(client) ?? 1_000): Promise<T> {
  if (!client.isReady) throw new RedisUnavailable('redis is not connected');
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      client.sendCommand(args) as Promise<T>,
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

/**
 * Closes a client at shutdown: politely when connected (within a deadline), at once otherwise.
 * QUIT on a client that is still trying to reconnect never resolves, which held a service's
 * shutdown open while Redis was down.
 */
export async function closeRedis(client: Redis, timeoutMs = 2_000): Promise<void> {
  if (client.isReady) {
    let timer: NodeJS.Timeout | undefined;
    const closed = await Promise.race([
      client.quit().then(
        () => true,
        () => false,
      ),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs))),
    ]);
    clearTimeout(timer);
    if (closed) return;
  }
  if (client.isOpen) client.destroy();
}
