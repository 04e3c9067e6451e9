import { randomBytes, randomUUID } from 'node:crypto';
import { luaScript, redisCommand, runScript, type Redis } from '@cp/redis';
import type { EventType } from './events';
import { ownerGroup, WebhookKeys } from './keys';
import { SecretBox, SecretUnreadable } from './SecretBox';

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

/** What a sweep over every stored secret did (see `resealAll`). */
export interface ResealReport {
  owners: number;
  webhooks: number;
  resealed: number;
  unreadable: number;
}

/**
 * Each owner's webhooks in Redis: one hash per owner (`wh:<ns>:hooks:<owner>`, id → webhook),
 * a count per owner group (`wh:<ns>:groups`) from which every replica knows, without asking
 * per request, which owners may have webhooks at all (see SubscriberIndex), and a count per owner
 * (`wh:<ns>:owners`) for sweeps. Secrets are stored sealed by `box` (see SecretBox).
 */
export class WebhookStore {
  readonly keys: WebhookKeys;

  constructor(
    private readonly redis: Redis,
    namespace: string,
    private readonly maxPerOwner: number,
    private readonly box = new SecretBox([]),
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
    const sealed = { ...hook, secret: this.box.seal(hook.secret, ownerId, hook.id) };
    const stored = await runScript<number>(
      this.redis,
      CREATE,
      [this.keys.hooks(ownerId), this.keys.groups, this.keys.owners],
      [hook.id, JSON.stringify(sealed), String(this.maxPerOwner), ownerGroup(ownerId), ownerId],
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

  /**
   * The webhook with its secret, for a delivery; null when it was deleted. SecretUnreadable when
   * no configured key opens its secret. A secret not sealed under the current key is sealed anew.
   */
  async find(ownerId: string, id: string): Promise<Webhook | null> {
    const value = await redisCommand<string | null>(this.redis, ['HGET', this.keys.hooks(ownerId), id]);
    if (!value) return null;
    const stored = JSON.parse(value) as Webhook;
    const hook = { ...stored, secret: this.box.open(stored.secret, ownerId, id) };
    if (this.box.stale(stored.secret)) await this.reseal(ownerId, value, hook).catch(() => false);
    return hook;
  }

  /**
   * Seals every stored secret that is not sealed under the current key (stored plain, or under an
   * older key): after it reports no unreadable one, the older keys may be taken out of the list.
   * The owners read a page of 200 at a time (HSCAN), each owner's webhooks (at most maxPerOwner)
   * in one read: what it holds at once does not grow with the number of owners.
   */
  async resealAll(): Promise<ResealReport> {
    const report: ResealReport = { owners: 0, webhooks: 0, resealed: 0, unreadable: 0 };
    if (!this.box.sealing) return report;
    let cursor = '0';
    do {
      const [next, flat] = await redisCommand<[string, string[]]>(this.redis, [
        'HSCAN',
        this.keys.owners,
        cursor,
        'COUNT',
        '200',
      ]);
      cursor = next;
      for (const [ownerId] of pairs(flat)) await this.resealOwner(ownerId, report);
    } while (cursor !== '0');
    return report;
  }

  private async resealOwner(ownerId: string, report: ResealReport): Promise<void> {
    report.owners++;
    const hooks = await redisCommand<string[] | Record<string, string>>(this.redis, [
      'HGETALL',
      this.keys.hooks(ownerId),
    ]);
    for (const [id, value] of pairs(hooks)) {
      report.webhooks++;
      const stored = JSON.parse(value) as Webhook;
      if (!this.box.stale(stored.secret)) continue;
      try {
        const hook = { ...stored, secret: this.box.open(stored.secret, ownerId, id) };
        if (await this.reseal(ownerId, value, hook)) report.resealed++;
      } catch (error) {
        if (!(error instanceof SecretUnreadable)) throw error;
        report.unreadable++;
      }
    }
  }

  /** Stores the hook's secret sealed under the current key, if its stored value is still `was`. */
  private async reseal(ownerId: string, was: string, hook: Webhook): Promise<boolean> {
    const sealed = JSON.stringify({ ...hook, secret: this.box.seal(hook.secret, ownerId, hook.id) });
    const done = await runScript<number>(
      this.redis,
      RESEAL,
      [this.keys.hooks(ownerId), this.keys.owners],
      [hook.id, was, sealed, ownerId],
    );
    return done === 1;
  }

  /** False when the owner has no webhook of that id. */
  async remove(ownerId: string, id: string): Promise<boolean> {
    const removed = await runScript<number>(
      this.redis,
      REMOVE,
      [this.keys.hooks(ownerId), this.keys.groups, this.keys.owners],
      [id, ownerGroup(ownerId), ownerId],
    );
    return removed === 1;
  }

  /** The owner groups that hold at least one webhook. */
  async groupsInUse(): Promise<Set<string>> {
    const flat = await redisCommand<string[] | Record<string, string>>(this.redis, ['HGETALL', this.keys.groups]);
    return new Set(
      pairs(flat)
        .filter(([, n]) => Number(n) > 0)
        .map(([g]) => g),
    );
  }
}

/** A hash as HGETALL gives it (a flat list, or an object with RESP3), as pairs. */
function pairs(flat: string[] | Record<string, string>): (readonly [string, string])[] {
  return Array.isArray(flat)
    ? Array.from({ length: flat.length / 2 }, (_, i) => [flat[2 * i]!, flat[2 * i + 1]!] as const)
    : Object.entries(flat);
}

// The owner's entry in `owners` is set to its count after each change (so it also mends an entry
// missing for webhooks created before the index existed).
const CREATE = luaScript(`
if redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('HINCRBY', KEYS[2], ARGV[4], 1)
redis.call('HSET', KEYS[3], ARGV[5], redis.call('HLEN', KEYS[1]))
return 1`);

const REMOVE = luaScript(`
if redis.call('HDEL', KEYS[1], ARGV[1]) == 0 then return 0 end
if redis.call('HINCRBY', KEYS[2], ARGV[2], -1) <= 0 then redis.call('HDEL', KEYS[2], ARGV[2]) end
local left = redis.call('HLEN', KEYS[1])
if left == 0 then redis.call('HDEL', KEYS[3], ARGV[3]) else redis.call('HSET', KEYS[3], ARGV[3], left) end
return 1`);

const RESEAL = luaScript(`
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
redis.call('HSET', KEYS[2], ARGV[4], redis.call('HLEN', KEYS[1]))
return 1`);
