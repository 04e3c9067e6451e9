import { setTimeout as sleep } from 'node:timers/promises';
import { ServiceError } from '@cp/errors';
import { performance } from 'node:perf_hooks';
import type { StageTimings } from './StageTimings';
import { StaleBookRead, type PartRanges, type UploadBook, type UploadState } from '../store/UploadBook';

/** One upload's bookkeeping as a change sees it: the latest state, and its parts read on demand. */
export interface BookView {
  state: UploadState;
  part(k: number): Promise<PartRanges>;
}

interface Pending {
  change: (view: BookView) => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
  timings?: StageTimings;
  queuedAt: number;
}

/**
 * Applies changes to an upload's bookkeeping by compare-and-set. The changes that queue up for one
 * upload in this process while a batch runs are applied together and committed once. A batch that
 * loses to another writer (another replica) is computed again from the latest version, a bounded
 * number of times. A change that throws is undone and only its own caller sees the error. Changes
 * may run more than once: they compute from the view and keep their side effects idempotent.
 */
export class BookCommits {
  private readonly queues = new Map<string, Pending[]>();

  constructor(private readonly book: UploadBook) {}

  /** Applies `change` in the upload's next version; `timings` gets the wait (`lock`) and the commit (`commit`). */
  commit<T>(contentId: string, change: (view: BookView) => Promise<T>, timings?: StageTimings): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const entry: Pending = {
        change,
        resolve: resolve as (v: unknown) => void,
        reject,
        timings,
        queuedAt: performance.now(),
      };
      const queue = this.queues.get(contentId);
      if (queue) {
        queue.push(entry);
        return;
      }
      this.queues.set(contentId, [entry]);
      void this.drain(contentId);
    });
  }

  private async drain(contentId: string): Promise<void> {
    for (;;) {
      const batch = this.queues.get(contentId)!.splice(0);
      if (batch.length === 0) {
        this.queues.delete(contentId);
        return;
      }
      const startedAt = performance.now();
      for (const entry of batch) entry.timings?.add('lock', startedAt - entry.queuedAt);
      try {
        const outcomes = await this.applyUntilCommitted(contentId, batch);
        batch.forEach((entry, i) =>
          outcomes[i]!.ok ? entry.resolve(outcomes[i]!.value) : entry.reject(outcomes[i]!.value),
        );
      } catch (error) {
        for (const entry of batch) entry.reject(error);
      } finally {
        for (const entry of batch) entry.timings?.add('commit', performance.now() - startedAt);
      }
    }
  }

  private async applyUntilCommitted(contentId: string, batch: Pending[]): Promise<Outcome[]> {
    for (let attempt = 1; ; attempt++) {
      const outcomes = await this.apply(contentId, batch);
      if (outcomes) return outcomes;
      if (attempt === MAX_ATTEMPTS) throw ServiceError.of('contentBusy');
      await sleep(Math.random() * 2 ** attempt);
    }
  }

  /** Runs the batch on the latest version and commits what it changed; null when another writer committed first. */
  private async apply(contentId: string, batch: Pending[]): Promise<Outcome[] | null> {
    const state = await this.book.state(contentId);
    const parts = new Map<number, PartRanges>();
    const loaded = new Map<string, string>([['st', JSON.stringify(state)]]);
    const pristine = new Map<number, PartRanges>();
    const view: BookView = {
      state,
      part: async (k) => {
        let part = parts.get(k);
        if (!part) {
          part = await this.book.part(contentId, k, state.version);
          parts.set(k, part);
          pristine.set(k, structuredClone(part));
          loaded.set(`p${k}`, JSON.stringify(part));
        }
        return part;
      },
    };
    const outcomes: Outcome[] = [];
    for (const entry of batch) {
      const before = snapshot(state, parts);
      try {
        outcomes.push({ ok: true, value: await entry.change(view) });
      } catch (error) {
        if (error instanceof StaleBookRead) return null;
        restore(before, pristine, state, parts);
        outcomes.push({ ok: false, value: error });
      }
    }
    const changedParts = [...parts.values()].filter((part) => JSON.stringify(part) !== loaded.get(`p${part.k}`));
    if (changedParts.length === 0 && JSON.stringify(state) === loaded.get('st')) return outcomes;
    if (await this.book.commit(state, changedParts)) return outcomes;
    // Nothing to compute again from: the upload was completed or removed meanwhile.
    if (state.version === 0) throw ServiceError.of('contentNotFound', `there is no upload ${contentId} any more`);
    return null;
  }
}

/** How often a batch is computed again after losing the compare-and-set to another writer. */
const MAX_ATTEMPTS = 8;

type Outcome = { ok: boolean; value: unknown };
type Snapshot = { state: UploadState; parts: Map<number, PartRanges> };

function snapshot(state: UploadState, parts: Map<number, PartRanges>): Snapshot {
  return { state: structuredClone(state), parts: new Map([...parts].map(([k, p]) => [k, structuredClone(p)])) };
}

/** Puts the documents back as they were before a change that failed (parts it loaded: as loaded). */
function restore(
  before: Snapshot,
  pristine: Map<number, PartRanges>,
  state: UploadState,
  parts: Map<number, PartRanges>,
): void {
  Object.assign(state, before.state);
  for (const [k, part] of parts) Object.assign(part, structuredClone(before.parts.get(k) ?? pristine.get(k)!));
}
