import type { Logger } from '@cp/logging';
import type { Outbox, OutboxQueue } from './Outbox';

/**
 * The outbox entries one dispatcher round has claimed and not yet settled, kept claimed while the
 * round works on them: every third of the lease each is re-scored to now + lease, if its score is
 * still the one this round gave it (an entry settled, retried or postponed meanwhile is left as its
 * outcome made it). So the lease can be short, a few seconds: a dispatcher killed mid-round gives
 * its claims back that soon, while a live one keeps them however long its batch takes.
 */
export class HeldClaims {
  private readonly held: Record<OutboxQueue, Map<string, number>> = { deliveries: new Map(), intents: new Map() };
  private readonly timer: NodeJS.Timeout;
  private renewing: Promise<void> | null = null;

  constructor(
    private readonly outbox: Outbox,
    private readonly leaseMs: number,
    private readonly clock: () => number,
    private readonly logger: Logger,
  ) {
    this.timer = setInterval(
      () => {
        this.renewing ??= this.renew().finally(() => {
          this.renewing = null;
        });
      },
      Math.max(50, Math.floor(leaseMs / 3)),
    );
    this.timer.unref();
  }

  /** Entries just claimed until `until`. */
  hold(queue: OutboxQueue, entries: ReadonlyArray<{ id: string }>, until: number): void {
    for (const { id } of entries) this.held[queue].set(id, until);
  }

  /** An entry whose outcome is written: no longer renewed. */
  release(queue: OutboxQueue, id: string): void {
    this.held[queue].delete(id);
  }

  /** Stops renewing (the round is over); waits for a renewal in flight. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.renewing;
  }

  private async renew(): Promise<void> {
    for (const queue of ['deliveries', 'intents'] as const) {
      const held = this.held[queue];
      if (held.size === 0) continue;
      const until = this.clock() + this.leaseMs;
      const asked = [...held];
      try {
        const renewed = new Set(await this.outbox.renewClaims(queue, asked, until));
        for (const [id, was] of asked) {
          // Released meanwhile, or its score is another's now: left alone.
          if (held.get(id) !== was) continue;
          if (renewed.has(id)) held.set(id, until);
          else held.delete(id);
        }
      } catch (error) {
        // Tried again at the next tick; a claim that runs out meanwhile may be sent twice (at least once).
        this.logger.debug({ err: error, queue }, 'could not renew the claims of a webhook dispatch round');
      }
    }
  }
}
