import type { Logger } from '@cp/logging';
import { systemClock, type Clock } from '@cp/service-kit';
import type { RedisLease } from '../store/RedisLease';
import type { UploadBook } from '../store/UploadBook';
import type { ExpiringUploads } from '../uploads/UploadCleanup';
import type { SweeperMetrics } from './SweeperMetrics';

export interface UploadSweeperOptions {
  intervalMs: number;
  /** How long the lease lasts after the sweeper's last renewal (every third of it) before another presumes it dead. */
  leaseMs: number;
  batchSize: number;
  clock?: Clock;
  /** When it last swept, for operators; none when not given. */
  metrics?: SweeperMetrics;
}

const LEASE = 'upload-sweeper';

/**
 * Removes uploads not completed within their time to live: aborts the S3 multipart upload, deletes
 * staged pieces and bookkeeping. Also finishes the cleanup of completed contents whose completing
 * request could not delete their staged pieces. Every replica runs one; a lease lets one sweep at a time.
 */
export class UploadSweeper {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<number> | null = null;
  private readonly clock: Clock;

  constructor(
    private readonly book: Pick<UploadBook, 'expired'>,
    private readonly uploads: ExpiringUploads,
    private readonly lease: Pick<RedisLease, 'acquire' | 'renew' | 'release'>,
    private readonly logger: Logger,
    private readonly options: UploadSweeperOptions,
  ) {
    this.clock = options.clock ?? systemClock;
  }

  /** One pass; returns how many uploads it removed (0 when another sweeper holds the lease). */
  async sweepOnce(): Promise<number> {
    const { leaseMs, batchSize } = this.options;
    const token = await this.lease.acquire(LEASE, leaseMs);
    if (token === null) return 0;
    // Renewed while it sweeps: a sweeper that dies hands over within one lease.
    const renewal = setInterval(
      () => void this.lease.renew(LEASE, token, leaseMs).catch(() => undefined),
      Math.max(50, Math.floor(leaseMs / 3)),
    );
    renewal.unref();
    let removed = 0;
    let failed = 0;
    try {
      for (const id of await this.book.expired(this.clock(), batchSize)) {
        try {
          if (!(await this.uploads.expire(id))) continue; // written to or completed since
          removed++;
          this.logger.info({ contentId: id }, 'expired upload removed');
        } catch (error) {
          failed++;
          this.logger.warn({ contentId: id, err: error }, 'could not remove an expired upload; next sweep retries');
        }
      }
      for (const id of await this.uploads.pendingCleanups(batchSize)) {
        try {
          if (await this.uploads.finishCleanup(id))
            this.logger.info({ contentId: id }, 'staging of a completed content removed');
        } catch (error) {
          failed++;
          this.logger.warn(
            { contentId: id, err: error },
            'could not remove the staging of a completed content; next sweep retries',
          );
        }
      }
      if (failed === 0) this.options.metrics?.succeeded(this.clock());
    } finally {
      clearInterval(renewal);
      await this.lease.release(LEASE, token).catch(() => undefined);
    }
    return removed;
  }

  start(): void {
    this.options.metrics?.succeeded(this.clock());
    this.timer = setInterval(() => {
      if (this.running) return;
      this.running = this.sweepOnce()
        .catch((error: unknown) => {
          this.logger.warn({ err: error }, 'sweep failed');
          return 0;
        })
        .finally(() => {
          this.running = null;
        });
    }, this.options.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.running;
  }
}
