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
    private readonly leaseMs = 30_000,
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
      await this.acquire(name);
      try {
        return await work();
      } finally {
        await this.claims.release(name);
      }
    } finally {
      releaseLocal();
      if (this.local.get(name) === tail) this.local.delete(name);
    }
  }

  private async acquire(name: string): Promise<void> {
    const deadline = Date.now() + this.waitMs;
    let pause = 1;
    while (!(await this.claims.acquire(name, new Date(), this.leaseMs))) {
      if (Date.now() > deadline) throw ServiceError.of('contentBusy');
      await sleep(pause + Math.random() * pause);
      pause = Math.min(pause * 2, 20);
    }
  }
}
