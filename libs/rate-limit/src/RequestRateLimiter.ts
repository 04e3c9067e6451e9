import { createHash } from 'node:crypto';
import type { Request, RequestHandler } from 'express';
import { Counter, Registry } from 'prom-client';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible';
import { ServiceError } from '@cp/errors';
import type { Logger } from '@cp/logging';
import { HEADERS, headerKey } from '@cp/protocol';
import type { Redis } from '@cp/redis';
import { clientAddress } from './clientAddress';
import type { RateLimitConfig } from './settings';

export interface Limit {
  points: number;
  seconds: number;
}

export interface RequestRateLimiterOptions {
  /** Key prefix in Redis (`rl:auth`): the service's Redis user is granted `~<prefix>:*`. */
  prefix: string;
  /** Null: no limit per api key. */
  perKey: Limit | null;
  /** Null: no limit per client address. */
  perAddress: Limit | null;
  trustedProxyHops: number;
  /** How long Redis may take before the in-memory limiter decides instead. */
  redisTimeoutMs?: number;
  logger: Logger;
  /** Where rate_limited_requests_total and rate_limit_redis_failures_total are counted (/metrics). */
  registry?: Registry;
}

/** A limit kept in Redis (shared by all replicas), with a per-process one used when Redis fails. */
class SharedLimit {
  private readonly shared: RateLimiterRedis;
  private readonly local: RateLimiterMemory;

  constructor(redis: Redis, keyPrefix: string, limit: Limit) {
    const opts = { keyPrefix, points: limit.points, duration: limit.seconds };
    this.shared = new RateLimiterRedis({
      ...opts,
      storeClient: redis,
      useRedisPackage: true,
      rejectIfRedisNotReady: true,
    });
    this.local = new RateLimiterMemory(opts);
  }

  /** Milliseconds until a retry may succeed, or 0 when this request is within the limit. */
  async consume(key: string, timeoutMs: number, onRedisError: (error: unknown) => void): Promise<number> {
    try {
      await withTimeout(this.shared.consume(key), timeoutMs);
      return 0;
    } catch (error) {
      if (error instanceof RateLimiterRes) return Math.max(1, error.msBeforeNext);
      onRedisError(error);
    }
    try {
      await this.local.consume(key);
      return 0;
    } catch (error) {
      if (error instanceof RateLimiterRes) return Math.max(1, error.msBeforeNext);
      throw error;
    }
  }
}

/**
 * Limits requests per api key and per client address, counted in Redis so that every replica
 * shares the count. When Redis fails or is slow, each process goes on counting in memory (the
 * same limits per replica) instead of refusing everyone or letting everyone through; a Redis
 * error never becomes a 500. Keys hold a hash of the api key, never the key itself.
 */
export class RequestRateLimiter {
  private readonly perKey: SharedLimit | null;
  private readonly perAddress: SharedLimit | null;
  private lastWarning = 0;
  private readonly refused: Counter<'limit'>;
  private readonly redisFailures: Counter;

  constructor(
    redis: Redis,
    private readonly options: RequestRateLimiterOptions,
  ) {
    const registers = [options.registry ?? new Registry()];
    this.refused = new Counter({
      name: 'rate_limited_requests_total',
      help: 'Requests refused with 429, by the limit they were over: key or address',
      labelNames: ['limit'],
      registers,
    });
    this.redisFailures = new Counter({
      name: 'rate_limit_redis_failures_total',
      help: 'Rate-limit checks counted in memory because Redis failed or was slow',
      registers,
    });
    this.perKey = options.perKey ? new SharedLimit(redis, `${options.prefix}:key`, options.perKey) : null;
    this.perAddress = options.perAddress ? new SharedLimit(redis, `${options.prefix}:addr`, options.perAddress) : null;
  }

  /** From a service's settings; null when rate limiting is turned off. */
  static fromConfig(
    redis: Redis,
    prefix: string,
    config: RateLimitConfig,
    logger: Logger,
    registry?: Registry,
  ): RequestRateLimiter | null {
    if (!config.RATE_LIMIT_ENABLED) return null;
    const limit = (points: number, seconds: number): Limit | null => (points > 0 ? { points, seconds } : null);
    return new RequestRateLimiter(redis, {
      prefix,
      perKey: limit(config.RATE_LIMIT_PER_KEY_POINTS, config.RATE_LIMIT_PER_KEY_SECONDS),
      perAddress: limit(config.RATE_LIMIT_PER_ADDRESS_POINTS, config.RATE_LIMIT_PER_ADDRESS_SECONDS),
      trustedProxyHops: config.TRUSTED_PROXY_HOPS,
      logger,
      registry,
    });
  }

  /** Milliseconds until the caller may try again; 0 when this request may go on. */
  async check(apiKey: string | undefined, address: string): Promise<number> {
    const timeout = this.options.redisTimeoutMs ?? 500;
    const onRedisError = (error: unknown) => this.warn(error);
    const [byKey, byAddress] = await Promise.all([
      this.perKey && apiKey ? this.perKey.consume(keyHash(apiKey), timeout, onRedisError) : 0,
      this.perAddress ? this.perAddress.consume(address, timeout, onRedisError) : 0,
    ]);
    if (byKey > 0) this.refused.inc({ limit: 'key' });
    if (byAddress > 0) this.refused.inc({ limit: 'address' });
    return Math.max(byKey, byAddress);
  }

  /** Express middleware: 429 TooManyRequests with Retry-After (seconds) over either limit. */
  middleware(apiKeyOf: (req: Request) => string | undefined = apiKeyInRequest): RequestHandler {
    return (req, _res, next) => {
      this.check(apiKeyOf(req), clientAddress(req, this.options.trustedProxyHops)).then((waitMs) => {
        if (waitMs === 0) return next();
        const seconds = Math.max(1, Math.ceil(waitMs / 1000));
        next(
          ServiceError.of('TooManyRequests', `too many requests; retry in ${seconds} s`, {
            headers: { 'Retry-After': String(seconds) },
          }),
        );
      }, next);
    };
  }

  private warn(error: unknown): void {
    this.redisFailures.inc();
    const now = Date.now();
    if (now - this.lastWarning < 30_000) return;
    this.lastWarning = now;
    this.options.logger.warn(
      { err: (error as Error)?.message ?? String(error) },
      'rate limits counted in memory: redis does not answer',
    );
  }
}

/** The api key as /auth and /sessions accept it: `apiKey` or `api-key` (any case), or X-Kontur-Apikey. */
export function apiKeyInRequest(req: Request): string | undefined {
  for (const [name, value] of Object.entries(req.query)) {
    const n = name.toLowerCase();
    if (n !== 'apikey' && n !== 'api-key') continue;
    const s = Array.isArray(value) ? value[0] : value;
    if (typeof s === 'string' && s !== '') return s;
  }
  const header = req.headers[headerKey(HEADERS.apiKey)];
  return typeof header === 'string' && header !== '' ? header : undefined;
}

const keyHash = (apiKey: string): string => createHash('sha256').update(apiKey).digest('hex').slice(0, 32);

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`redis did not answer within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}
