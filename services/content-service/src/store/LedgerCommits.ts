import { ServiceError } from '@cp/errors';
import { performance } from 'node:perf_hooks';
import type { StageTimings } from '../uploads/StageTimings';
import type { Locks } from './Locks';
import type { PartRanges, UploadLedger, UploadState } from './UploadLedger';

/** The documents of one content, as a change sees them under the content's lock. */
export interface LedgerView {
  state: UploadState;
  part(k: number): Promise<PartRanges>;
}

interface Pending {
  change: (view: LedgerView) => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
  timings?: StageTimings;
  queuedAt: number;
}

/**
 * Applies changes to a content's bookkeeping, several at a time: the changes that queued up for
 * one content while the previous batch ran are applied one after another to the same documents,
 * which are then committed once as the content's next version (group commit). A change that
 * throws is undone (its documents restored) and only its own caller sees the error. Changes may
 * run more than once (when the commit loses to another writer): they compute from the view and
 * keep their side effects idempotent.
 *
 * The versioned commit is what fences writers, so a batch is first tried without the content's
 * lock, from the version this process saw last: with one writer per content (the common case)
 * that costs two inserts and no other round trip. A batch that loses to another writer (another
 * replica, or a claim taken over) is computed again under the lock, which keeps writers of one
 * content from racing each other over and over.
 */
export class LedgerCommits {
  private readonly queues = new Map<string, Pending[]>();

  constructor(
    private readonly ledger: UploadLedger,
    private readonly locks: Locks,
    private readonly lockName: (contentId: string) => string,
  ) {}

  /** Applies `change` in the content's next version; `timings` gets the wait (`lock`) and the commit (`commit`). */
  commit<T>(contentId: string, change: (view: LedgerView) => Promise<T>, timings?: StageTimings): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const queue = this.queues.get(contentId);
      const entry: Pending = { change, resolve: resolve as (v: unknown) => void, reject, timings, queuedAt: performance.now() };
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
      let outcomes: { ok: boolean; value: unknown }[] = [];
      const startedAt = performance.now();
      for (const entry of batch) entry.timings?.add('lock', startedAt - entry.queuedAt);
      try {
        if (!(await this.apply(contentId, batch, outcomes, false))) {
          await this.locks.with(this.lockName(contentId), async () => {
            for (let attempt = 2; ; attempt++) {
              outcomes = [];
              if (await this.apply(contentId, batch, outcomes, true)) return;
              if (attempt === MAX_ATTEMPTS) throw ServiceError.of('contentBusy');
            }
          });
        }
      } catch (error) {
        for (const entry of batch) entry.reject(error);
        continue;
      } finally {
        for (const entry of batch) entry.timings?.add('commit', performance.now() - startedAt);
      }
      batch.forEach((entry, i) => (outcomes[i]!.ok ? entry.resolve(outcomes[i]!.value) : entry.reject(outcomes[i]!.value)));
    }
  }

  /**
   * Runs the batch on the latest version and commits what it changed; false when another writer
   * committed first. From the version last seen (`latest` false), which may be stale: the insert of
   * the next version finds that out, and a batch that writes nothing (a check, or only refusals)
   * makes sure with one lookup that no later version exists.
   */
  private async apply(contentId: string, batch: Pending[], outcomes: { ok: boolean; value: unknown }[], latest: boolean): Promise<boolean> {
    const state = latest ? await this.ledger.state(contentId) : await this.ledger.lastSeenState(contentId);
    const readVersion = state.version ?? 0;
    const parts = new Map<number, PartRanges>();
    const loaded = new Map<string, string>([[state._id, JSON.stringify(state)]]);
    const pristine = new Map<number, PartRanges>();
    const view: LedgerView = {
      state,
      part: async (k) => {
        let part = parts.get(k);
        if (!part) {
          part = await this.ledger.part(contentId, k, state);
          parts.set(k, part);
          pristine.set(k, structuredClone(part));
          loaded.set(part._id, JSON.stringify(part));
        }
        return part;
      },
    };
    for (const entry of batch) {
      const before = snapshot(state, parts);
      try {
        outcomes.push({ ok: true, value: await entry.change(view) });
      } catch (error) {
        restore(before, pristine, state, parts);
        outcomes.push({ ok: false, value: error });
      }
    }
    const changedParts = [...parts.values()].filter((part) => JSON.stringify(part) !== loaded.get(part._id));
    if (changedParts.length === 0 && JSON.stringify(state) === loaded.get(state._id)) return latest || this.ledger.isLatest(contentId, readVersion);
    return this.ledger.commit(state, changedParts);
  }
}

/** How often a batch is computed again after losing the race for the next version (a lock taken over meanwhile). */
const MAX_ATTEMPTS = 5;

type Snapshot = { state: UploadState; parts: Map<number, PartRanges> };

function snapshot(state: UploadState, parts: Map<number, PartRanges>): Snapshot {
  return { state: structuredClone(state), parts: new Map([...parts].map(([k, p]) => [k, structuredClone(p)])) };
}

/** Puts the documents back as they were before a change that failed (parts it loaded: as loaded). */
function restore(before: Snapshot, pristine: Map<number, PartRanges>, state: UploadState, parts: Map<number, PartRanges>): void {
  Object.assign(state, before.state);
  for (const [k, part] of parts) Object.assign(part, structuredClone(before.parts.get(k) ?? pristine.get(k)!));
}
