import { setTimeout as sleep } from 'node:timers/promises';
import { ServiceError } from '@cp/errors';
import type { Claims } from './Claims';

/**
 * Short mutual exclusion over one content's bookkeeping, held only around a read-modify-write of
 * small documents, never while bytes move. Across replicas the lock is an insert-claim in the
 * database; within one process, requests for the same lock queue in memory first, so that only
 * one of them at a time polls the database.
 */
export class Locks {
  private readonly local = new Map<string, Promise<void>>();

  constructor(
    private readonly claims: Claims,
    private readonly leaseMs = 10_000,
    private readonly waitMs = 15_000,
  ) {}

  async with<T>(name: string, work: () => Promise<T>): Promise<T> {
    const previous = this.local.get(name) ?? Promise.resolve();
    let releaseLocal!: () => void;
    const mine = new Promise<void>((resolve) => (releaseLocal = resolve));
    const tail = previous.then(() => mine);
    this.local.set(name, tail);
    try {
      await previous;
      const token = await this.acquire(name);
      // Renewed while held (a read-modify-write of small documents, but the database may stall):
      // a holder that dies leaves a lock that runs out within one lease.
      const renewal = setInterval(() => void this.claims.renew(name, token, new Date()).catch(() => undefined), Math.max(50, Math.floor(this.leaseMs / 3)));
      renewal.unref();
      try {
        return await work();
      } finally {
        clearInterval(renewal);
        await this.claims.release(name, token);
      }
    } finally {
      releaseLocal();
      if (this.local.get(name) === tail) this.local.delete(name);
    }
  }

  private async acquire(name: string): Promise<string> {
    const deadline = Date.now() + this.waitMs;
    let pause = 1;
    for (;;) {
      const token = await this.claims.acquire(name, new Date(), this.leaseMs);
      if (token !== null) return token;
      if (Date.now() > deadline) throw ServiceError.of('contentBusy');
      await sleep(pause + Math.random() * pause);
      pause = Math.min(pause * 2, 20);
    }
  }
}
