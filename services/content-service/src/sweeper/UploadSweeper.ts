import type { Logger } from '@cp/logging';
import type { Claims } from '../store/Claims';
import type { ContentRepository } from '../store/ContentRepository';
import { systemClock, type Clock } from '@cp/service-kit';
import type { ExpiringUploads } from '../uploads/UploadExpiry';

export interface UploadSweeperOptions {
  intervalMs: number;
  /** How long the lease lasts after the sweeper's last renewal (every third of it) before another presumes it dead. */
  leaseMs: number;
  batchSize: number;
  clock?: Clock;
}

const LEASE = 'upload-sweeper';

/**
 * Removes uploads not completed within their time to live: aborts the S3 multipart upload, deletes
 * staged pieces and records. Also finishes the cleanup of completed contents whose completing
 * request could not delete their staged pieces. Every replica runs one; a lease (an insert-claim)
 * lets one sweep at a time.
 */
export class UploadSweeper {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<number> | null = null;
  private readonly clock: Clock;

  constructor(
    private readonly contents: ContentRepository,
    private readonly uploads: ExpiringUploads,
    private readonly leases: Claims,
    private readonly logger: Logger,
    private readonly options: UploadSweeperOptions,
  ) {
    this.clock = options.clock ?? systemClock;
  }

  /** One pass; returns how many uploads it removed (0 when another sweeper holds the lease). */
  async sweepOnce(): Promise<number> {
    const now = this.clock();
    const token = await this.leases.acquire(LEASE, now, this.options.leaseMs);
    if (token === null) return 0;
    // Renewed while it sweeps: a sweeper that dies hands over within one lease.
    const renewal = setInterval(
      () => void this.leases.renew(LEASE, token, this.clock()).catch(() => undefined),
      Math.max(50, Math.floor(this.options.leaseMs / 3)),
    );
    renewal.unref();
    let removed = 0;
    try {
      for (const record of await this.contents.findExpired(now, this.options.batchSize)) {
        try {
          if (!(await this.uploads.expire(record._id))) continue; // written to or completed since (counted as swept otherwise)
          removed++;
          this.logger.info({ contentId: record._id, ownerId: record.ownerId, createdAt: record.createdAt }, 'expired upload removed');
        } catch (error) {
          this.logger.warn({ contentId: record._id, err: error }, 'could not remove an expired upload; next sweep retries');
        }
      }
      for (const pending of await this.uploads.pendingCleanups(this.options.batchSize)) {
        try {
          if (await this.uploads.finishCleanup(pending)) this.logger.info({ contentId: pending._id }, 'staging of a completed content removed');
        } catch (error) {
          this.logger.warn({ contentId: pending._id, err: error }, 'could not remove the staging of a completed content; next sweep retries');
        }
      }
      await this.uploads
        .dropGoneMarks(this.options.batchSize)
        .catch((error: unknown) => this.logger.warn({ err: error }, 'could not drop old marks of forgotten bookkeeping; next sweep retries'));
    } finally {
      clearInterval(renewal);
      await this.leases.release(LEASE, token);
    }
    return removed;
  }

  start(): void {
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
