import { setTimeout as sleep } from 'node:timers/promises';
import { ServiceError } from '@cp/errors';
import type { Claims } from './Claims';

/**
 * Short mutual exclusion over one content's (or one part's) bookkeeping, built on insert-claims.
 * Held only around a read-modify-write of small documents, never while bytes move.
 */
export class Locks {
  constructor(
    private readonly claims: Claims,
    private readonly leaseMs = 30_000,
    private readonly waitMs = 15_000,
  ) {}

  async with<T>(names: string[], work: () => Promise<T>): Promise<T> {
    const held: string[] = [];
    try {
      for (const name of [...names].sort()) {
        await this.acquire(name);
        held.push(name);
      }
      return await work();
    } finally {
      for (const name of held.reverse()) await this.claims.release(name);
    }
  }

  private async acquire(name: string): Promise<void> {
    const deadline = Date.now() + this.waitMs;
    let pause = 1;
    while (!(await this.claims.acquire(name, new Date(), this.leaseMs))) {
      if (Date.now() > deadline) throw ServiceError.unavailable('contentBusy', 'the content is busy with other requests; retry in a moment', undefined, 1);
      await sleep(pause + Math.random() * pause);
      pause = Math.min(pause * 2, 20);
    }
  }
}
