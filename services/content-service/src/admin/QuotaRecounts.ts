import type { Logger } from '@cp/logging';
import { redisCommand, type Redis } from '@cp/redis';
import type { QuotaReconciler } from './QuotaReconciler';

/**
 * Recounts an owner's storage from S3 in the background after a request was refused for it: the
 * counters a process killed between S3's answer and its count left off (bytes held for a content
 * that never came, bytes stored and never counted) would otherwise refuse the owner until an
 * operator ran `pnpm admin quota show`. At most one recount per owner per `intervalSeconds` among
 * all replicas (a Redis key taken with SET NX), and one at a time per process; a request never
 * waits for one.
 */
export class QuotaRecounts {
  private running = false;

  constructor(
    private readonly reconciler: QuotaReconciler,
    private readonly redis: Redis,
    namespace: string,
    private readonly logger: Logger,
    private readonly intervalSeconds = 600,
    private readonly prefix = `up:${namespace}:~quota-recount:`,
  ) {}

  /** Starts a recount of the owner unless one ran lately or this process is busy with another. */
  request(ownerId: string): void {
    if (this.running) return;
    this.running = true;
    void this.recount(ownerId).finally(() => {
      this.running = false;
    });
  }

  private async recount(ownerId: string): Promise<void> {
    try {
      const taken = await redisCommand(this.redis, [
        'SET',
        this.prefix + ownerId,
        '1',
        'EX',
        String(this.intervalSeconds),
        'NX',
      ]);
      if (taken !== 'OK') return;
      const report = await this.reconciler.reconcile(ownerId);
      const off = report.counted.used !== report.actual.used || report.counted.reserved !== report.actual.reserved;
      if (off)
        this.logger.warn(
          { ownerId, counted: report.counted, actual: report.actual, after: report.after },
          'quota counters were off after a refusal; recounted from S3',
        );
    } catch (error) {
      this.logger.warn({ ownerId, err: String(error) }, 'could not recount an owner’s quota after a refusal');
    }
  }
}
