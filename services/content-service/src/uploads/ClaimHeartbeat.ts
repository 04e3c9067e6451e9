import { ServiceError } from '@cp/errors';

/** The holder of a claim lost it (taken over, or it could not be renewed in time): it stops and changes nothing. */
export function claimLost(what: string, cause?: unknown): ServiceError {
  return ServiceError.of(
    'claimLost',
    `this request lost its claim on ${what} (taken over, or the database did not answer in time); send it again`,
    { cause },
  );
}

/**
 * Keeps a claim alive while its holder works: renews it every third of its lease, so a claim
 * outlives a slow S3 transfer but dies within one lease of its holder. When a renewal finds the
 * claim taken over, fails, or has not succeeded for two thirds of the lease (the database does not
 * answer), `signal` aborts: the holder's S3 request stops, and the holder commits nothing more.
 */
export class ClaimHeartbeat {
  private readonly controller = new AbortController();
  private readonly timer: NodeJS.Timeout;
  private renewing: Promise<void> | null = null;
  private lastRenewed = Date.now();
  private lost: ServiceError | null = null;

  /** `renew` returns false when the claim is no longer this holder's. */
  constructor(
    private readonly what: string,
    private readonly renew: () => Promise<boolean>,
    private readonly leaseMs: number,
  ) {
    this.timer = setInterval(() => this.tick(), Math.max(50, Math.floor(leaseMs / 3)));
    this.timer.unref();
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Throws claimLost when the claim was lost: call before each commit the claim entitles to. */
  check(): void {
    if (this.lost) throw this.lost;
  }

  /** Stops renewing (the holder is done, or releases the claim); waits for a renewal in flight. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.renewing;
  }

  private tick(): void {
    if (this.lost) return;
    if (this.renewing) {
      if (Date.now() - this.lastRenewed > (2 * this.leaseMs) / 3)
        this.lose(new Error('no renewal succeeded for two thirds of the lease'));
      return;
    }
    this.renewing = this.renew()
      .then((mine) => {
        if (mine) this.lastRenewed = Date.now();
        else this.lose(new Error('the claim was taken over'));
      })
      .catch((error: unknown) => this.lose(error))
      .finally(() => {
        this.renewing = null;
      });
  }

  private lose(cause: unknown): void {
    if (this.lost) return;
    this.lost = claimLost(this.what, cause);
    clearInterval(this.timer);
    this.controller.abort(this.lost);
  }
}
