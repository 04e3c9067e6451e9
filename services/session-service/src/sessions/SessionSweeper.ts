import type { Logger } from '@cp/logging';
import type { SessionRepository } from '../store/SessionRepository';
import type { Clock } from '@cp/service-kit';

/**
 * Deletes expired pairs, rotation claims and finished families (FerretDB has no TTL indexes), and
 * tombstones again the sids of recently revoked families in the sid cache (`reassert`).
 */
export class SessionSweeper {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(
    private readonly repo: SessionRepository,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly opts: { intervalMs: number; familyMaxAgeMs: number },
    private readonly reassert: () => Promise<number> = async () => 0,
  ) {}

  start(): void {
    this.timer = setInterval(() => {
      this.running ??= this.sweepOnce()
        .catch((error: unknown) => this.logger.warn({ err: String(error) }, 'session sweep failed'))
        .finally(() => {
          this.running = undefined;
        });
    }, this.opts.intervalMs);
    this.timer.unref();
  }

  async sweepOnce(): Promise<void> {
    const removed = await this.repo.sweep(this.clock(), this.opts.familyMaxAgeMs);
    if (removed) this.logger.info({ removed }, 'expired session records removed');
    await this.reassert();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }
}
