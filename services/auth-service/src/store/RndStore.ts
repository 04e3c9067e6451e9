import { createHash } from 'node:crypto';
import { keyScript, redisCall, type KeyScript, type Redis } from '@cp/redis';

export type ApproveOutcome = 'ok' | 'missing' | 'wrong';

/** An approve's outcome; for a match, when the consumed rnd would have expired (for `restore`). */
export interface Approval {
  outcome: ApproveOutcome;
  expiresAt?: Date;
}

/**
 * The one rnd per user (key `auth:rnd:<userId>`): only SHA-256 of it is kept, with the thumbprint
 * it was issued for, its expiry (decided by the service clock, so tests can move time) and the
 * wrong tries so far. Redis's own expiry only collects garbage a little after that.
 */
export class RndStore {
  constructor(
    private readonly redis: Redis<typeof RND_SCRIPTS>,
    private readonly maxTries: number,
  ) {}

  /** Stores the rnd for a user, replacing any earlier one. */
  async put(userId: string, rnd: Uint8Array, thumbprint: string, expiresAt: Date, ttlSeconds: number): Promise<void> {
    await redisCall(this.redis, (r) =>
      r.rndPut(key(userId), digest(rnd), thumbprint, String(expiresAt.getTime()), String(ttlSeconds + 60)),
    );
  }

  /**
   * Compares and consumes in one atomic step: a match deletes the rnd (a second approve with the
   * same bytes finds nothing); a mismatch counts a try and drops the rnd at the limit.
   */
  async approve(userId: string, candidate: Uint8Array, thumbprint: string, now: Date): Promise<Approval> {
    const reply = await redisCall(this.redis, (r) =>
      r.rndApprove(key(userId), digest(candidate), thumbprint, String(now.getTime()), String(this.maxTries)),
    );
    const [outcome, expiresAt] = String(reply).split(' ');
    return { outcome: outcome as ApproveOutcome, ...(expiresAt ? { expiresAt: new Date(Number(expiresAt)) } : {}) };
  }

  /**
   * Puts back an rnd a match consumed when no session came of it (the session-service or MongoDB
   * did not answer), until its own expiry, so that the same approve can be sent again. Never over
   * a newer rnd of the user's, and never one already expired.
   */
  async restore(userId: string, rnd: Uint8Array, thumbprint: string, expiresAt: Date, now: Date): Promise<void> {
    const ttlSeconds = Math.ceil((expiresAt.getTime() - now.getTime()) / 1000) + 60;
    await redisCall(this.redis, (r) =>
      r.rndRestore(
        key(userId),
        digest(rnd),
        thumbprint,
        String(expiresAt.getTime()),
        String(ttlSeconds),
        String(now.getTime()),
      ),
    );
  }
}

const key = (userId: string): string => `auth:rnd:${userId.toLowerCase()}`;
const digest = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');

const PUT = `
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'hash', ARGV[1], 'thumbprint', ARGV[2], 'expiresAt', ARGV[3], 'tries', '0')
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[4]))
return 'ok'
`;

// Hash comparison without an early exit: the time taken does not depend on where they differ.
const APPROVE = `
local v = redis.call('HMGET', KEYS[1], 'hash', 'thumbprint', 'expiresAt')
if not v[1] then return 'missing' end
if tonumber(v[3]) <= tonumber(ARGV[3]) then
  redis.call('DEL', KEYS[1])
  return 'missing'
end
if v[2] ~= ARGV[2] then return 'missing' end
local a, b = v[1], ARGV[1]
local diff = 0
if #a ~= #b then diff = 1 end
for i = 1, math.min(#a, #b) do
  if string.byte(a, i) ~= string.byte(b, i) then diff = diff + 1 end
end
if diff == 0 then
  redis.call('DEL', KEYS[1])
  return 'ok ' .. v[3]
end
local tries = redis.call('HINCRBY', KEYS[1], 'tries', 1)
if tries >= tonumber(ARGV[4]) then redis.call('DEL', KEYS[1]) end
return 'wrong'
`;

// HMGET, not EXISTS: the commands the auth-service's Redis user may run (docs/operations.md).
const RESTORE = `
if redis.call('HMGET', KEYS[1], 'hash')[1] then return 'kept' end
if tonumber(ARGV[3]) <= tonumber(ARGV[5]) then return 'expired' end
redis.call('HSET', KEYS[1], 'hash', ARGV[1], 'thumbprint', ARGV[2], 'expiresAt', ARGV[3], 'tries', '0')
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[4]))
return 'ok'
`;

/** The scripts, for connectRedis (run by SHA-1, sent whole only when the server lacks them). */
export const RND_SCRIPTS: { rndPut: KeyScript; rndApprove: KeyScript; rndRestore: KeyScript } = {
  rndPut: keyScript(PUT),
  rndApprove: keyScript(APPROVE),
  rndRestore: keyScript(RESTORE),
};
