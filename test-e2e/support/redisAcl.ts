// Redis users as deploy/compose.yaml defines them, created for a test under a name of its own.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { createLogger } from '@cp/logging';
import { connectRedis, type Redis } from '@cp/redis';

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

/** An ACL user with a service's rules from compose.yaml; `close` disconnects it and deletes the user. */
export async function connectAsServiceUser(adminUrl: string, service: string): Promise<{ client: Redis; username: string; close: () => Promise<void> }> {
  const logger = createLogger({ service: 'acl-test', level: 'silent' });
  const admin = connectRedis(adminUrl, logger);
  await ready(admin);
  const username = `test-${service}-${randomBytes(4).toString('hex')}`;
  const password = randomBytes(16).toString('hex');
  await admin.sendCommand(['ACL', 'SETUSER', username, 'reset', `>${password}`, ...composeRedisRules(service)]);
  const url = new URL(adminUrl);
  url.username = username;
  url.password = password;
  const client = connectRedis(url.toString(), logger);
  try {
    await ready(client);
  } catch (error) {
    client.destroy();
    await admin.sendCommand(['ACL', 'DELUSER', username]);
    await admin.quit();
    throw error;
  }
  return {
    client,
    username,
    close: async () => {
      await client.quit().catch(() => undefined);
      await admin.sendCommand(['ACL', 'DELUSER', username]);
      await admin.quit();
    },
  };
}

async function ready(client: Redis): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!client.isReady) {
    if (Date.now() > deadline) throw new Error('redis did not become ready (wrong credentials?)');
    await new Promise((r) => setTimeout(r, 20));
  }
}
