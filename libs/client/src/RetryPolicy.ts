import { setTimeout as sleep } from 'node:timers/promises';
import { ApiError, RetriesExhaustedError, TransportError } from './errors';

/** Two minutes: long enough for a service or the gateway to restart, short enough to notice an outage. */
export const DEFAULT_RETRY_FOR_MS = 120_000;
/** The longest a Retry-After is honoured; a longer one is cut to this. */
export const RETRY_AFTER_CAP_MS = 60_000;
const BACKOFF_BASE_MS = 500;
const BACKOFF_CAP_MS = 10_000;

/** A retry about to happen: what failed, how long until the next attempt, until when it goes on. */
export interface RetryNotice {
  /** For people: `service unavailable (503)`, `connection refused`. */
  reason: string;
  /** The answer's status, or null for a connection failure. */
  status: number | null;
  method: string;
  path: string;
  /** Attempts made so far (the failed one included). */
  attempt: number;
  delayMs: number;
  /** When the next attempt starts (epoch ms). */
  retryAt: number;
  /** When the budget ends and no further attempt starts (epoch ms). */
  giveUpAt: number;
}

const STATUS_REASONS: Record<number, string> = {
  408: 'request timeout',
  429: 'too many requests',
  500: 'internal error',
  502: 'bad gateway',
  503: 'service unavailable',
  504: 'gateway timeout',
};

const NETWORK_REASONS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  EPIPE: 'connection closed while sending',
  ECONNABORTED: 'connection reset',
  ANSWER_BROKE_OFF: 'connection broke off mid-answer',
  // pipeline()'s word for an answer whose connection closed before its end.
  ERR_STREAM_PREMATURE_CLOSE: 'connection broke off mid-answer',
  ETIMEDOUT: 'connection timed out',
  ENETUNREACH: 'network unreachable',
  EHOSTUNREACH: 'host unreachable',
  ENETDOWN: 'network down',
  EAI_AGAIN: 'name lookup failed for now',
};

/**
 * The failures after which the service surely did not act on the request: refused before it was
 * read (429, 503: the service refuses, or a dependency it needs is down) or never sent (no connection).
 */
const NOT_ACTED = new Set<number | string>([
  429,
  503,
  'ECONNREFUSED',
  'ENETUNREACH',
  'EHOSTUNREACH',
  'ENETDOWN',
  'EAI_AGAIN',
]);

/**
 * Why an error is worth another attempt, or null when it is not: answers 408, 429, 500, 502, 503,
 * 504 and connections refused, reset or broken off. Every other answer (400, 401, 403, 404, 409,
 * 413, 416 ...) and local errors (a file that cannot be read) are final. `once`: the request must
 * not take effect twice (a webhook's creation), so only failures after which the service surely
 * did not act are retried, not a reset or a 502/504 that may have come after it acted.
 */
export function retryReason(error: unknown, once = false): string | null {
  if (error instanceof ApiError) {
    if (once && !NOT_ACTED.has(error.status)) return null;
    return STATUS_REASONS[error.status] ? `${STATUS_REASONS[error.status]} (${error.status})` : null;
  }
  if (error instanceof TransportError) {
    if (once && !NOT_ACTED.has(error.code ?? '')) return null;
    return (error.code && NETWORK_REASONS[error.code]) ?? null;
  }
  return null;
}

export interface RetryPolicyOptions {
  /** How long one request keeps being retried after its first failure (ms). 0: no retries. */
  retryForMs?: number;
  /** Called before each wait. */
  onRetry?: (notice: RetryNotice) => void;
  /** For tests: the random source of the jitter. */
  random?: () => number;
}

/**
 * Retries within a time budget per request: exponential backoff with full jitter (a random wait
 * between 0 and 0.5 s · 2^n, at most 10 s), never sooner than Retry-After (at most 60 s). Each
 * request has its own budget, counted from its first failure; no attempt starts after it.
 */
export class RetryPolicy {
  readonly retryForMs: number;
  private readonly onRetry: ((notice: RetryNotice) => void) | undefined;
  private readonly random: () => number;

  constructor(options: RetryPolicyOptions = {}) {
    this.retryForMs = options.retryForMs ?? DEFAULT_RETRY_FOR_MS;
    if (!Number.isFinite(this.retryForMs) || this.retryForMs < 0) throw new RangeError('retryForMs must be 0 or more');
    this.onRetry = options.onRetry;
    this.random = options.random ?? Math.random;
  }

  /** The wait before attempt `attempt + 1`. */
  delayMs(attempt: number, error: unknown): number {
    const jitter = this.random() * Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** (attempt - 1));
    const asked =
      error instanceof ApiError && error.retryAfterMs !== null ? Math.min(RETRY_AFTER_CAP_MS, error.retryAfterMs) : 0;
    return Math.round(Math.max(asked, jitter));
  }

  /**
   * Runs `attempt` until it succeeds, fails in a way not worth retrying, or the budget is spent
   * (then RetriesExhaustedError with the last failure as its cause).
   */
  async run<T>(
    what: { method: string; path: string; signal?: AbortSignal; once?: boolean },
    attempt: (n: number) => Promise<T>,
  ): Promise<T> {
    let firstFailure: number | null = null;
    for (let n = 1; ; n++) {
      try {
        return await attempt(n);
      } catch (error) {
        if (what.signal?.aborted) throw what.signal.reason ?? error;
        const reason = retryReason(error, what.once);
        if (reason === null || this.retryForMs === 0) throw error;
        const now = Date.now();
        firstFailure ??= now;
        const giveUpAt = firstFailure + this.retryForMs;
        if (now >= giveUpAt)
          throw new RetriesExhaustedError(reason, now - firstFailure, n, error as ApiError | TransportError);
        const delayMs = Math.min(this.delayMs(n, error), giveUpAt - now);
        this.onRetry?.({
          reason,
          status: error instanceof ApiError ? error.status : null,
          method: what.method,
          path: what.path,
          attempt: n,
          delayMs,
          retryAt: now + delayMs,
          giveUpAt,
        });
        try {
          await sleep(delayMs, undefined, { signal: what.signal });
        } catch (aborted) {
          throw what.signal?.reason ?? aborted;
        }
      }
    }
  }
}
