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
}

/**
 * Applies changes to a content's bookkeeping under its lock, several at a time: the changes that
 * queued up for one content while the previous batch ran are applied one after another to the
 * same documents, which are then written once (group commit). A change that throws is undone
 * (its documents restored) and only its own caller sees the error.
 */
export class LedgerCommits {
  private readonly queues = new Map<string, Pending[]>();

  constructor(
    private readonly ledger: UploadLedger,
    private readonly locks: Locks,
    private readonly lockName: (contentId: string) => string,
  ) {}

  commit<T>(contentId: string, change: (view: LedgerView) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const queue = this.queues.get(contentId);
      const entry: Pending = { change, resolve: resolve as (v: unknown) => void, reject };
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
      const outcomes: { ok: boolean; value: unknown }[] = [];
      try {
        await this.locks.with(this.lockName(contentId), async () => {
          const state = await this.ledger.state(contentId);
          const parts = new Map<number, PartRanges>();
          const loaded = new Map<string, string>([[state._id, JSON.stringify(state)]]);
          const pristine = new Map<number, PartRanges>();
          const view: LedgerView = {
            state,
            part: async (k) => {
              let part = parts.get(k);
              if (!part) {
                part = await this.ledger.part(contentId, k);
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
          const writes: Promise<void>[] = [];
          if (JSON.stringify(state) !== loaded.get(state._id)) writes.push(this.ledger.saveState(state));
          for (const part of parts.values()) if (JSON.stringify(part) !== loaded.get(part._id)) writes.push(this.ledger.savePart(part));
          await Promise.all(writes);
        });
      } catch (error) {
        for (const entry of batch) entry.reject(error);
        continue;
      }
      batch.forEach((entry, i) => (outcomes[i]!.ok ? entry.resolve(outcomes[i]!.value) : entry.reject(outcomes[i]!.value)));
    }
  }
}

type Snapshot = { state: UploadState; parts: Map<number, PartRanges> };

function snapshot(state: UploadState, parts: Map<number, PartRanges>): Snapshot {
  return { state: structuredClone(state), parts: new Map([...parts].map(([k, p]) => [k, structuredClone(p)])) };
}

/** Puts the documents back as they were before a change that failed (parts it loaded: as loaded). */
function restore(before: Snapshot, pristine: Map<number, PartRanges>, state: UploadState, parts: Map<number, PartRanges>): void {
  Object.assign(state, before.state);
  for (const [k, part] of parts) Object.assign(part, structuredClone(before.parts.get(k) ?? pristine.get(k)!));
}
