import { luaScript as script, redisCommand, runScript, type LuaScript, type Redis } from '@cp/redis';

/** An owner's own limits; null: the service's default applies. UNLIMITED: none, whatever the default. */
export interface QuotaLimits {
  bytes: number | null;
  uploads: number | null;
}

/** An owner's counted storage: bytes of ready contents, and bytes held for unfinished uploads (their declared totals). */
export interface QuotaUsage {
  used: number;
  reserved: number;
}

/** What a refused reservation found: the limit in force and the bytes already used or held. */
export interface Refusal {
  limit: number;
  held: number;
}

export const isRefusal = (r: { held: number } | Refusal): r is Refusal => 'limit' in r;

export const UNLIMITED = -1;

/**
 * Owners' storage quotas in Redis: one hash per owner, `up:<ns>:~quota:<ownerId>`, with its own
 * limits (`bytes`, `uploads`; absent: the default) and its counters (`used`, `reserved`). A
 * reservation compares and adds in one Lua script, so two racing requests cannot both pass a limit
 * that only one fits under. The counters are kept by the requests that change what is stored and
 * may drift when a process dies between S3's answer and its count; `correct` (run by the
 * reconciliation against S3) puts them right.
 */
export class RedisQuotas {
  private readonly prefix: string;
  /** Changes counted once (`adjust`'s `once`), remembered a day: `up:<ns>:~quota-once:<name>`. */
  private readonly oncePrefix: string;

  constructor(
    private readonly redis: Redis,
    namespace: string,
  ) {
    this.prefix = `up:${namespace}:~quota:`;
    this.oncePrefix = `up:${namespace}:~quota-once:`;
  }

  /**
   * Holds `bytes` for the owner unless used + reserved + bytes passes its limit (its own, else
   * `defaultLimit`); `upTo`: as much of `bytes` as fits, refused only when nothing does. Returns
   * the bytes held, or the refusal.
   */
  async reserve(
    ownerId: string,
    bytes: number,
    defaultLimit: number,
    upTo = false,
  ): Promise<{ held: number } | Refusal> {
    const [ok, limit, held, granted] = await this.script<number[]>(RESERVE, ownerId, [
      String(bytes),
      String(defaultLimit),
      upTo ? '1' : '0',
    ]);
    return ok === 1 ? { held: granted! } : { limit: limit!, held: held! };
  }

  /**
   * Moves the counters by the given amounts (never below zero). `once`: the name of the change
   * (a content's deletion, say), made at most once however many requests report it.
   */
  async adjust(ownerId: string, reservedDelta: number, usedDelta: number, once?: string): Promise<void> {
    if (reservedDelta === 0 && usedDelta === 0) return;
    const keys = [this.key(ownerId), ...(once ? [this.oncePrefix + once] : [])];
    await runScript(this.redis, ADJUST, keys, [String(reservedDelta), String(usedDelta), String(ONCE_TTL_SECONDS)]);
  }

  async read(ownerId: string): Promise<{ limits: QuotaLimits; usage: QuotaUsage }> {
    const [bytes, uploads, used, reserved] = await redisCommand<(string | null)[]>(this.redis, [
      'HMGET',
      this.key(ownerId),
      'bytes',
      'uploads',
      'used',
      'reserved',
    ]);
    const limit = (v: string | null | undefined) => (v == null ? null : Number(v));
    return {
      limits: { bytes: limit(bytes), uploads: limit(uploads) },
      usage: { used: Number(used ?? 0), reserved: Number(reserved ?? 0) },
    };
  }

  /** Sets the owner's own limits: a number (UNLIMITED for none), or null to go back to the default; undefined: unchanged. */
  async setLimits(ownerId: string, limits: Partial<QuotaLimits>): Promise<void> {
    for (const field of ['bytes', 'uploads'] as const) {
      const value = limits[field];
      if (value === undefined) continue;
      await redisCommand(
        this.redis,
        value === null ? ['HDEL', this.key(ownerId), field] : ['HSET', this.key(ownerId), field, String(value)],
      );
    }
  }

  /**
   * Puts the counters right after a reconciliation that read `before`, then counted `actual` from
   * S3 and the bookkeeping: each counter moves by actual − before, so that what requests counted
   * meanwhile is kept. Returns the counters after.
   */
  async correct(ownerId: string, before: QuotaUsage, actual: QuotaUsage): Promise<QuotaUsage> {
    await this.adjust(ownerId, actual.reserved - before.reserved, actual.used - before.used);
    return (await this.read(ownerId)).usage;
  }

  private key(ownerId: string): string {
    return this.prefix + ownerId;
  }

  private script<T = unknown>(script: LuaScript, ownerId: string, args: string[]): Promise<T> {
    return runScript<T>(this.redis, script, [this.key(ownerId)], args);
  }
}

// Counters are whole numbers of bytes (below 2^53): written with %.0f, never in exponent form.
const RESERVE = script(`
local f = redis.call('HMGET', KEYS[1], 'bytes', 'used', 'reserved')
local limit = tonumber(f[1] or ARGV[2])
local reserved = tonumber(f[3] or '0')
local held = tonumber(f[2] or '0') + reserved
local n = tonumber(ARGV[1])
if limit >= 0 and held + n > limit then
  if ARGV[3] ~= '1' or held >= limit then return {0, limit, held, 0} end
  n = limit - held
end
if n > 0 then redis.call('HSET', KEYS[1], 'reserved', string.format('%.0f', reserved + n)) end
return {1, limit, held, n}`);

/** How long a change made `once` is remembered: far longer than racing requests take. */
const ONCE_TTL_SECONDS = 24 * 3600;

const ADJUST = script(`
if KEYS[2] and not redis.call('SET', KEYS[2], '1', 'NX', 'EX', tonumber(ARGV[3])) then return 0 end
local f = redis.call('HMGET', KEYS[1], 'reserved', 'used')
local reserved = math.max(0, tonumber(f[1] or '0') + tonumber(ARGV[1]))
local used = math.max(0, tonumber(f[2] or '0') + tonumber(ARGV[2]))
redis.call('HSET', KEYS[1], 'reserved', string.format('%.0f', reserved), 'used', string.format('%.0f', used))
return 1`);
