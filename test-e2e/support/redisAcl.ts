// Redis users as deploy/compose.yaml defines them, created for a test under a name of its own.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { createLogger } from '@cp/logging';
import {
  closeRedis,
  connectRedis,
  redisCommand,
  type None,
  type Redis,
  type RedisOptions,
  type RedisScripts,
  type RedisTarget,
} from '@cp/redis';

const COMPOSE = join(__dirname, '..', '..', 'deploy', 'compose.yaml');

/** The ACL rules of a service's Redis user in deploy/compose.yaml, without its password. */
export function composeRedisRules(service: string): string[] {
  const compose = parse(readFileSync(COMPOSE, 'utf8')) as { services: { redis: { command: string[] } } };
  const command = compose.services.redis.command;
  for (let i = 0; i < command.length - 1; i++) {
    if (command[i] !== '--user') continue;
    const [name, ...rules] = command[i + 1]!.split(/\s+/);
    if (name === service) return rules.filter((r) => !r.startsWith('>'));
  }
  throw new Error(`deploy/compose.yaml has no Redis user ${service}`);
}

/**
 * An ACL user with a service's rules from compose.yaml, connected as that user (at `adminUrl`, or
 * through `via(username, password)`: Sentinel); `close` disconnects it and deletes the user.
 */
export async function connectAsServiceUser<S extends RedisScripts = None>(
  adminUrl: string,
  service: string,
  options: RedisOptions<S> & { via?: (username: string, password: string) => RedisTarget } = {},
): Promise<{ client: Redis<S>; username: string; close: () => Promise<void> }> {
  const logger = createLogger({ service: 'acl-test', level: 'silent' });
  const admin = connectRedis(adminUrl, logger);
  await ready(admin);
  const username = `test-${service}-${randomBytes(4).toString('hex')}`;
  const password = randomBytes(16).toString('hex');
  await redisCommand(admin, ['ACL', 'SETUSER', username, 'reset', `>${password}`, ...composeRedisRules(service)]);
  const url = new URL(adminUrl);
  url.username = username;
  url.password = password;
  const client = connectRedis(options.via ? options.via(username, password) : url.toString(), logger, options);
  const dropUser = async () => {
    await redisCommand(admin, ['ACL', 'DELUSER', username]);
    await closeRedis(admin);
  };
  try {
    await ready(client);
  } catch (error) {
    await closeRedis(client);
    await dropUser();
    throw error;
  }
  return {
    client,
    username,
    close: async () => {
      await closeRedis(client);
      await dropUser();
    },
  };
}

async function ready<S extends RedisScripts>(client: Redis<S>): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!client.isReady) {
    if (Date.now() > deadline) throw new Error('redis did not become ready (wrong credentials?)');
    await new Promise((r) => setTimeout(r, 20));
  }
}
