import { luaScript as script, redisCommand, runScript, type LuaScript, type Redis } from '@cp/redis';
import {
  emptyPart,
  emptyUploadState,
  OwnedLimitReached,
  StaleBookRead,
  type PartRanges,
  type UploadBook,
  type UploadRecord,
  type UploadState,
} from './UploadBook';

/**
 * The bookkeeping of unfinished uploads in Redis. An upload is one hash, `up:<ns>:<id>`: `v` (its
 * version), `rec` (its record), `exp` (its expiry, ms), `st` (its state), `p<k>` (grid part k).
 * A commit is one Lua script that compares `v` and writes the changed fields: atomic, and fenced
 * without any lock. Expiries and pending cleanups are sorted sets scored by time; each owner's
 * uploads a sorted set of ids read in id order (`~owner:<ownerId>`). `ns` keeps the
 * uploads of different buckets apart.
 *
 * Durability is Redis's: the local stack and the manifests run it with an append-only file, so a
 * Redis killed and restarted keeps what it acknowledged. The bytes themselves are in S3 already.
 */
export class RedisUploadBook implements UploadBook {
  private readonly prefix: string;
  private readonly expiries: string;
  private readonly cleanups: string;

  constructor(
    private readonly redis: Redis,
    namespace: string,
  ) {
    this.prefix = `up:${namespace}:`;
    this.expiries = `up:${namespace}:~expiry`;
    this.cleanups = `up:${namespace}:~cleanup`;
  }

  async create(record: UploadRecord, maxOwned?: number): Promise<void> {
    const { expiresAt, ...fixed } = record;
    // The indexes first: an entry without an upload is dropped by the sweeper (or skipped by a
    // listing), an upload without one would never expire (or never be listed).
    // The owner is written before the owner's index, so that a removal finds the entry even when
    // the creation died before its record (`own` alone does not make an upload: find() needs `rec`).
    await this.command(['ZADD', this.expiries, 'NX', String(expiresAt.getTime()), record._id]);
    await this.command(['HSET', this.key(record._id), 'own', record.ownerId]);
    if (maxOwned === undefined) await this.command(['ZADD', this.owned(record.ownerId), '0', record._id]);
    else {
      const held = await runScript<number>(
        this.redis,
        ADD_OWNED,
        [this.owned(record.ownerId)],
        [record._id, String(maxOwned)],
      );
      if (held >= 0) {
        await this.command(['DEL', this.key(record._id)]);
        await this.command(['ZREM', this.expiries, record._id]);
        throw new OwnedLimitReached(maxOwned, held);
      }
    }
    const created = await this.script(CREATE, record._id, [
      JSON.stringify(fixed),
      String(expiresAt.getTime()),
      encodeState(emptyUploadState(record._id)),
    ]);
    if (created !== 1) throw new Error(`upload ${record._id} exists already`);
  }

  async find(id: string): Promise<UploadRecord | null> {
    const [rec, exp, uid] = await this.command<(string | null)[]>(['HMGET', this.key(id), 'rec', 'exp', 'uid']);
    if (!rec || !exp) return null;
    const fixed = JSON.parse(rec) as Omit<UploadRecord, 'expiresAt' | 'createdAt'> & { createdAt: string };
    const uploadId = uid ?? fixed.uploadId;
    return { ...fixed, uploadId, createdAt: new Date(fixed.createdAt), expiresAt: new Date(Number(exp)) };
  }

  async state(id: string): Promise<UploadState> {
    const [v, st] = await this.command<(string | null)[]>(['HMGET', this.key(id), 'v', 'st']);
    if (!v || !st) return emptyUploadState(id);
    return decodeState(id, st, Number(v));
  }

  async part(id: string, k: number, version?: number): Promise<PartRanges> {
    const [v, stored] = await this.command<(string | null)[]>(['HMGET', this.key(id), 'v', `p${k}`]);
    if (version !== undefined && Number(v ?? 0) !== version)
      throw new StaleBookRead(`upload ${id} moved past version ${version}`);
    return stored ? decodePart(stored) : emptyPart(id, k);
  }

  async commit(state: UploadState, parts: PartRanges[]): Promise<boolean> {
    if (state.version === 0) return false;
    const fields = ['st', encodeState(state), ...parts.flatMap((p) => [`p${p.k}`, JSON.stringify(p, dates)])];
    // The upload in force after a restart, beside the record, so that find() reads it with one HMGET.
    if (state.uploadId) fields.push('uid', state.uploadId);
    return (await this.script(COMMIT, state._id, [String(state.version), ...fields])) === 1;
  }

  async extend(id: string, expiresAt: Date): Promise<void> {
    const at = String(expiresAt.getTime());
    if ((await this.script(EXTEND, id, [at])) === 1) await this.command(['ZADD', this.expiries, 'GT', at, id]);
  }

  async expired(now: Date, limit: number): Promise<string[]> {
    return this.command<string[]>([
      'ZRANGE',
      this.expiries,
      '-inf',
      String(now.getTime() - 1),
      'BYSCORE',
      'LIMIT',
      '0',
      String(limit),
    ]);
  }

  async ownedUploads(ownerId: string, after: string | null, limit: number): Promise<string[]> {
    const from = after === null ? '-' : `(${after}`;
    return this.command<string[]>(['ZRANGE', this.owned(ownerId), from, '+', 'BYLEX', 'LIMIT', '0', String(limit)]);
  }

  async ownedCount(ownerId: string): Promise<number> {
    return this.command<number>(['ZCARD', this.owned(ownerId)]);
  }

  async remove(id: string): Promise<void> {
    // Out of its owner's index first: an upload being removed may go unlisted, never stay listed.
    const [own, rec] = await this.command<(string | null)[]>(['HMGET', this.key(id), 'own', 'rec']);
    const ownerId = own ?? (rec ? (JSON.parse(rec) as UploadRecord).ownerId : null);
    if (ownerId) await this.command(['ZREM', this.owned(ownerId), id]);
    await this.command(['DEL', this.key(id)]);
    await this.command(['ZREM', this.expiries, id]);
  }

  async noteCleanup(id: string, now: Date): Promise<void> {
    await this.command(['ZADD', this.cleanups, 'NX', String(now.getTime()), id]);
  }

  async pendingCleanups(limit: number): Promise<string[]> {
    return this.command<string[]>(['ZRANGE', this.cleanups, '0', String(limit - 1)]);
  }

  async cleanupDone(id: string): Promise<void> {
    await this.command(['ZREM', this.cleanups, id]);
  }

  private key(id: string): string {
    return this.prefix + id;
  }

  /** The owner's index: a sorted set of upload ids, all scored 0, so that it is read in id order (BYLEX). */
  private owned(ownerId: string): string {
    return `${this.prefix}~owner:${ownerId}`;
  }

  private command<T = unknown>(args: string[]): Promise<T> {
    return redisCommand<T>(this.redis, args);
  }

  private script(script: LuaScript, id: string, args: string[]): Promise<number> {
    return runScript<number>(this.redis, script, [this.key(id)], args);
  }
}

const CREATE = script(`
if redis.call('HGET', KEYS[1], 'rec') then return 0 end
redis.call('HSET', KEYS[1], 'v', '1', 'rec', ARGV[1], 'exp', ARGV[2], 'st', ARGV[3])
return 1`);

/** Adds the id to the owner's index if it holds fewer than ARGV[2]: -1; else how many it holds. */
const ADD_OWNED = script(`
local held = redis.call('ZCARD', KEYS[1])
if held >= tonumber(ARGV[2]) then return held end
redis.call('ZADD', KEYS[1], 0, ARGV[1])
return -1`);

const COMMIT = script(`
local v = redis.call('HGET', KEYS[1], 'v')
if (not v) or v ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'v', tostring(tonumber(v) + 1), unpack(ARGV, 2))
return 1`);

const EXTEND = script(`
local e = redis.call('HGET', KEYS[1], 'exp')
if not e then return 0 end
if tonumber(ARGV[1]) > tonumber(e) then redis.call('HSET', KEYS[1], 'exp', ARGV[1]) end
return 1`);

/** Dates as milliseconds (revived field by field below). */
function dates(this: Record<string, unknown>, key: string, value: unknown): unknown {
  const raw = this[key];
  return raw instanceof Date ? raw.getTime() : value;
}

const toDate = (ms: unknown): Date | null => (typeof ms === 'number' ? new Date(ms) : null);

function encodeState(state: UploadState): string {
  const { _id: _i, version: _v, ...fields } = state;
  return JSON.stringify(fields, dates);
}

function decodeState(id: string, stored: string, version: number): UploadState {
  const s = JSON.parse(stored) as UploadState;
  return {
    ...s,
    _id: id,
    version,
    completing: toDate(s.completing),
    expiring: toDate(s.expiring),
    lostSince: toDate(s.lostSince),
  };
}

function decodePart(stored: string): PartRanges {
  const p = JSON.parse(stored) as PartRanges;
  return {
    ...p,
    assembling: toDate(p.assembling),
    writing: p.writing ? { by: p.writing.by, since: toDate(p.writing.since)! } : null,
  };
}
