/** When a failed delivery is tried again. */
export interface RetrySchedule {
  /** The wait after the first failure (doubled after each further one). */
  firstMs: number;
  /** The longest wait between two attempts. */
  capMs: number;
  /** How long after its first attempt a delivery is given up (at least 24 h in production). */
  windowMs: number;
}

export const DEFAULT_RETRY_SCHEDULE: RetrySchedule = {
  firstMs: 10_000,
  capMs: 3_600_000,
  windowMs: 72 * 3_600_000,
};

/** The wait before attempt `failures + 1`: firstMs × 2^(failures−1), at most capMs, with up to 10 % jitter. */
export function retryDelayMs(failures: number, schedule: RetrySchedule, random = Math.random): number {
  const exponent = Math.min(Math.max(failures - 1, 0), 40);
  const base = Math.min(schedule.firstMs * 2 ** exponent, schedule.capMs);
  return Math.round(base * (1 + 0.1 * random()));
}
