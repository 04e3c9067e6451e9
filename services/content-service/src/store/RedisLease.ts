import { randomBytes } from 'node:crypto';
import { redisCommand, type Redis } from '@cp/redis';

/** Leases on named housekeeping (one sweeper at a time): a key that lives as long as its lease unless renewed by its holder. */
export class RedisLease {
  constructor(
    private readonly redis: Redis,
    private readonly namespace: string,
  ) {}

  /** The holder's token when this caller now holds the lease; null when another holds it. */
  async acquire(name: string, leaseMs: number): Promise<string | null> {
    const token = randomBytes(8).toString('hex');
    const set = await redisCommand(this.redis, ['SET', this.key(name), token, 'NX', 'PX', String(leaseMs)]);
    return set === null ? null : token;
  }

  /** Moves the lease on; false when it is no longer held with `token`. */
  async renew(name: string, token: string, leaseMs: number): Promise<boolean> {
    return (await redisCommand(this.redis, ['EVAL', RENEW, '1', this.key(name), token, String(leaseMs)])) === 1;
  }

  async release(name: string, token: string): Promise<void> {
    await redisCommand(this.redis, ['EVAL', RELEASE, '1', this.key(name), token]);
  }

  private key(name: string): string {
    return `up:${this.namespace}:~lease:${name}`;
  }
}

const RENEW = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0`;
const RELEASE = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;
