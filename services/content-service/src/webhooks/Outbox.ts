import { luaScript, redisCommand, runScript, type Redis } from '@cp/redis';
import type { EventContent, EventType, WebhookEvent } from './events';
import type { WebhookKeys } from './keys';

/** An event written down before its fact: published once the fact happened, dropped if it never did. */
export interface Intent {
  id: string;
  type: EventType;
  owner: string;
  content: EventContent;
  /** When it was written (ms): a fact not seen within the check window is taken as not happened. */
  at: number;
  /** The W3C traceparent of the request that made the fact, when it was traced: its deliveries continue that trace. */
  trace?: string;
}

/** The outbox's two claimable queues: deliveries due, and intents whose fact is to be checked. */
export type OutboxQueue = 'deliveries' | 'intents';

/** What the metrics tell of the outbox (Outbox.levels). */
export interface OutboxLevels {
  pending: number;
  deliveryOverdueMs: number;
  intentOverdueMs: number;
}

/** One event to one webhook: its body is fixed at publication, so every attempt sends the same bytes. */
export interface Delivery {
  /** `<event id>/<webhook id>` */
  id: string;
  owner: string;
  webhook: string;
  event: string;
  body: string;
  /** When it was published (ms); given up once the retry window from here has passed. */
  first: number;
  failures: number;
  /** The event's trace (its intent's `trace`), sent as the delivery's traceparent. */
  trace?: string;
}

/**
 * How long a published event's id is remembered, so that a late writer of the same fact publishes
 * nothing. Late writers are requests racing the first (a second DELETE, a completion's successor):
 * minutes at most; a day keeps a wide margin while the set holds only a day of events.
 */
const PUBLISHED_KEPT_MS = 24 * 3_600_000;

/**
 * The outbox of webhook events, in Redis. Before a fact (a content completed, deleted or expired)
 * its writer records an intent, scored by when to check the fact if the writer never comes back;
 * after the fact it publishes the event: one Lua script fans it out into one delivery per
 * subscribed webhook (sorted set `due`), remembers its id as published and removes the intent.
 * Publishing is idempotent: a second publication of the same event id (a successor, the intent
 * check) finds the id published and adds nothing. Deliveries are claimed by re-scoring them at
 * now + lease (renewed while the dispatcher works on them), so a dispatcher that dies returns its
 * claims when the lease runs out.
 */
export class Outbox {
  constructor(
    private readonly redis: Redis,
    private readonly keys: WebhookKeys,
  ) {}

  /**
   * Records the intent when the owner has a webhook for its type (and the event is not published
   * already); false (nothing written) otherwise. `checkAt`: when to look at the fact if no
   * publication comes first.
   */
  async intend(intent: Intent, checkAt: number): Promise<boolean> {
    const k = this.keys;
    const written = await runScript<number>(
      this.redis,
      INTEND,
      [k.hooks(intent.owner), k.intents, k.intent, k.published],
      [intent.id, intent.type, JSON.stringify(intent), String(checkAt)],
    );
    return written === 1;
  }

  /** Publishes the event: the number of deliveries it made (0 when it was published already, or nobody subscribes). */
  async publish(event: WebhookEvent, now: number, trace?: string): Promise<number> {
    const k = this.keys;
    return runScript<number>(
      this.redis,
      PUBLISH,
      [k.hooks(event.owner), k.intents, k.intent, k.published, k.due, k.delivery],
      [
        event.id,
        event.type,
        JSON.stringify(event),
        String(now),
        String(now - PUBLISHED_KEPT_MS),
        event.owner,
        trace ?? '',
      ],
    );
  }

  /** The intent of event `id` while it waits for its publication; null when there is none (published, dropped or never written). */
  async pendingIntent(id: string): Promise<Intent | null> {
    const value = await redisCommand<string | null>(this.redis, ['HGET', this.keys.intent, id]);
    return value === null ? null : (JSON.parse(value) as Intent);
  }

  /** Drops an intent whose fact did not happen. */
  async dropIntent(id: string): Promise<void> {
    await runScript(this.redis, FORGET, [this.keys.intents, this.keys.intent], [id]);
  }

  /** Looks at the intent again at `at`. */
  async postponeIntent(id: string, at: number): Promise<void> {
    await redisCommand(this.redis, ['ZADD', this.keys.intents, 'XX', String(at), id]);
  }

  /** Intents whose check time has come, each claimed until now + leaseMs. */
  async claimIntents(now: number, leaseMs: number, limit: number): Promise<Intent[]> {
    const claimed = await this.claim(this.keys.intents, this.keys.intent, now, leaseMs, limit);
    return claimed.map((v) => JSON.parse(v) as Intent);
  }

  /** Deliveries due, each claimed until now + leaseMs. */
  async claimDeliveries(now: number, leaseMs: number, limit: number): Promise<Delivery[]> {
    const claimed = await this.claim(this.keys.due, this.keys.delivery, now, leaseMs, limit);
    return claimed.map((v) => JSON.parse(v) as Delivery);
  }

  /**
   * Extends claims to `until`: each of `held` (id, the score its claim gave it) whose score is
   * still that one. The ids extended; an entry settled, retried or postponed since is left as is.
   */
  async renewClaims(
    queue: OutboxQueue,
    held: ReadonlyArray<readonly [string, number]>,
    until: number,
  ): Promise<string[]> {
    const zset = queue === 'deliveries' ? this.keys.due : this.keys.intents;
    return runScript<string[]>(
      this.redis,
      RENEW,
      [zset],
      [String(until), ...held.flatMap(([id, at]) => [id, String(at)])],
    );
  }

  /** A delivery acknowledged (or given up): gone. */
  async settle(id: string): Promise<void> {
    await runScript(this.redis, FORGET, [this.keys.due, this.keys.delivery], [id]);
  }

  /** A delivery failed: tried again at `at`, with its failure counted. */
  async retry(delivery: Delivery, at: number): Promise<void> {
    await runScript(
      this.redis,
      RETRY,
      [this.keys.due, this.keys.delivery],
      [delivery.id, JSON.stringify(delivery), String(at)],
    );
  }

  /** How many deliveries wait (for the metrics). */
  async pending(): Promise<number> {
    return redisCommand<number>(this.redis, ['ZCARD', this.keys.due]);
  }

  /**
   * The outbox's levels for the metrics, in one round trip of O(log n): the deliveries waiting, and
   * how long the longest-overdue delivery and intent have been due without a dispatcher claiming
   * them (ms; 0 when none is due). A claim re-scores its entry at the end of its lease, so an entry
   * being worked on is not overdue; one whose claimant died is, once its lease has run out.
   */
  async levels(now: number): Promise<OutboxLevels> {
    const [pending, due, intent] = await runScript<[number, string, string]>(
      this.redis,
      LEVELS,
      [this.keys.due, this.keys.intents],
      [],
    );
    const overdue = (score: string) => (score === '' ? 0 : Math.max(0, now - Number(score)));
    return { pending, deliveryOverdueMs: overdue(due), intentOverdueMs: overdue(intent) };
  }

  private claim(zset: string, hash: string, now: number, leaseMs: number, limit: number): Promise<string[]> {
    return runScript<string[]>(this.redis, CLAIM, [zset, hash], [String(now), String(now + leaseMs), String(limit)]);
  }
}

// KEYS: hooks, intents, intent, published. ARGV: id, type, intent, checkAt.
const SUBSCRIBED = `
local function subscribed(hooksKey, eventType)
  local found = {}
  for _, v in ipairs(redis.call('HVALS', hooksKey)) do
    local hook = cjson.decode(v)
    for _, e in ipairs(hook.events) do
      if e == eventType then table.insert(found, hook.id) end
    end
  end
  return found
end
`;

const INTEND = luaScript(`${SUBSCRIBED}
if redis.call('ZSCORE', KEYS[4], ARGV[1]) then return 0 end
if #subscribed(KEYS[1], ARGV[2]) == 0 then return 0 end
redis.call('HSET', KEYS[3], ARGV[1], ARGV[3])
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[1])
return 1`);

// KEYS: hooks, intents, intent, published, due, delivery. ARGV: id, type, body, now, forgetBefore, owner, trace ('' for none).
const PUBLISH = luaScript(`${SUBSCRIBED}
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
if redis.call('ZSCORE', KEYS[4], ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[4], ARGV[4], ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', ARGV[5])
local hooks = subscribed(KEYS[1], ARGV[2])
for _, hook in ipairs(hooks) do
  local id = ARGV[1] .. '/' .. hook
  local delivery = cjson.encode({ id = id, owner = ARGV[6], webhook = hook, event = ARGV[1], body = ARGV[3],
    first = tonumber(ARGV[4]), failures = 0, trace = ARGV[7] ~= '' and ARGV[7] or nil })
  redis.call('HSET', KEYS[6], id, delivery)
  redis.call('ZADD', KEYS[5], ARGV[4], id)
end
return #hooks`);

// KEYS: zset, hash. ARGV: now, leaseUntil, limit.
const CLAIM = luaScript(`
local ids = redis.call('ZRANGE', KEYS[1], '-inf', ARGV[1], 'BYSCORE', 'LIMIT', 0, tonumber(ARGV[3]))
local out = {}
for _, id in ipairs(ids) do
  local value = redis.call('HGET', KEYS[2], id)
  if value then
    redis.call('ZADD', KEYS[1], ARGV[2], id)
    table.insert(out, value)
  else
    redis.call('ZREM', KEYS[1], id)
  end
end
return out`);

// KEYS: zset. ARGV: until, then pairs of id and the score its claim gave it.
const RENEW = luaScript(`
local out = {}
for i = 2, #ARGV, 2 do
  local score = redis.call('ZSCORE', KEYS[1], ARGV[i])
  if score and tonumber(score) == tonumber(ARGV[i + 1]) then
    redis.call('ZADD', KEYS[1], 'XX', ARGV[1], ARGV[i])
    table.insert(out, ARGV[i])
  end
end
return out`);

// KEYS: due, intents. The earliest scores ('' for an empty set).
const LEVELS = luaScript(`
local due = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local intent = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
return { redis.call('ZCARD', KEYS[1]), due[2] or '', intent[2] or '' }`);

// KEYS: zset, hash. ARGV: id.
const FORGET = luaScript(`
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
return 1`);

// KEYS: due, delivery. ARGV: id, delivery, at. Only a delivery still there (not settled meanwhile).
const RETRY = luaScript(`
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 0 then return 0 end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
return 1`);
