import { randomBytes, randomUUID } from 'node:crypto';
import { luaScript, redisCommand, runScript, type Redis } from '@cp/redis';
import type { EventType } from './events';
import { ownerGroup, WebhookKeys } from './keys';

/** A webhook as stored: its secret signs every delivery (and is shown to its owner only at creation). */
export interface Webhook {
  id: string;
  url: string;
  events: EventType[];
  secret: string;
  'created-at': string;
}

/** A webhook as listed: without its secret. */
export type ListedWebhook = Omit<Webhook, 'secret'>;

export class TooManyWebhooks extends Error {
  override readonly name = 'TooManyWebhooks';
  readonly code = 'CP_ERR_TOO_MANY_WEBHOOKS';
}

/**
 * Each owner's webhooks in Redis: one hash per owner (`wh:<ns>:hooks:<owner>`, id → webhook),
 * and a count per owner group (`wh:<ns>:groups`) from which every replica knows, without asking
 * per request, which owners may have webhooks at all (see SubscriberIndex).
 */
export class WebhookStore {
  readonly keys: WebhookKeys;

  constructor(
    private readonly redis: Redis,
    namespace: string,
    private readonly maxPerOwner: number,
  ) {
    this.keys = new WebhookKeys(namespace);
  }

  /** Stores a new webhook with a fresh secret; TooManyWebhooks when the owner has maxPerOwner already. */
  async create(ownerId: string, url: string, events: EventType[], now: Date): Promise<Webhook> {
    const hook: Webhook = {
      id: randomUUID(),
      url,
      events: [...new Set(events)],
      secret: `whsec_${randomBytes(32).toString('base64url')}`,
      'created-at': now.toISOString(),
    };
    const stored = await runScript<number>(
      this.redis,
      CREATE,
      [this.keys.hooks(ownerId), this.keys.groups],
      [hook.id, JSON.stringify(hook), String(this.maxPerOwner), ownerGroup(ownerId)],
    );
    if (stored !== 1) throw new TooManyWebhooks(`owner ${ownerId} has ${this.maxPerOwner} webhooks already`);
    return hook;
  }

  async list(ownerId: string): Promise<ListedWebhook[]> {
    const values = await redisCommand<string[]>(this.redis, ['HVALS', this.keys.hooks(ownerId)]);
    return values
      .map((v) => JSON.parse(v) as Webhook)
      .map(({ secret: _secret, ...listed }) => listed)
      .sort((a, b) => a['created-at'].localeCompare(b['created-at']) || a.id.localeCompare(b.id));
  }

  /** The webhook with its secret, for a delivery; null when it was deleted. */
  async find(ownerId: string, id: string): Promise<Webhook | null> {
    const value = await redisCommand<string | null>(this.redis, ['HGET', this.keys.hooks(ownerId), id]);
    return value ? (JSON.parse(value) as Webhook) : null;
  }

  /** False when the owner has no webhook of that id. */
  async remove(ownerId: string, id: string): Promise<boolean> {
    const removed = await runScript<number>(
      this.redis,
      REMOVE,
      [this.keys.hooks(ownerId), this.keys.groups],
      [id, ownerGroup(ownerId)],
    );
    return removed === 1;
  }

  /** The owner groups that hold at least one webhook. */
  async groupsInUse(): Promise<Set<string>> {
    const flat = await redisCommand<string[] | Record<string, string>>(this.redis, ['HGETALL', this.keys.groups]);
    const entries = Array.isArray(flat)
      ? Array.from({ length: flat.length / 2 }, (_, i) => [flat[2 * i]!, flat[2 * i + 1]!] as const)
      : Object.entries(flat);
    return new Set(entries.filter(([, n]) => Number(n) > 0).map(([g]) => g));
  }
}

const CREATE = luaScript(`
if redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('HINCRBY', KEYS[2], ARGV[4], 1)
return 1`);

const REMOVE = luaScript(`
if redis.call('HDEL', KEYS[1], ARGV[1]) == 0 then return 0 end
if redis.call('HINCRBY', KEYS[2], ARGV[2], -1) <= 0 then redis.call('HDEL', KEYS[2], ARGV[2]) end
return 1`);
