// Changes to an upload's bookkeeping by compare-and-set (BookCommits), the claims on its work
// (part writes, assemblies, completion) taken and taken over through them, and the heartbeat that
// renews a claim while its holder works (ClaimHeartbeat).
import { type PartRanges, type Piece, StaleBookRead, type UploadBook, type UploadState } from '../store/UploadBook';
import { covers, PartGrid, partKey } from './PartGrid';
import { type StageTimings, type UploadMetrics } from './UploadMetrics';
import { isBeingWritten, isStale, type Leases } from './WriteAdmission';
import { ServiceError } from '@cp/errors';
import { setTimeout as sleep } from 'node:timers/promises';
import { performance } from 'node:perf_hooks';

/** A claim on an upload's work: a part write, a part's assembly, or the completion. */
export type ClaimKind = 'write' | 'assembly' | 'completion';

export interface Assembly {
  k: number;
  pieces: Piece[];
}

/** What a request claimed in a commit, to do after it. */
export interface Work {
  assemblies: Assembly[];
  complete: boolean;
  total: number | null;
  /** The piece replaced by a retry of the same range (its object is deleted). */
  replaced?: Piece;
  /** The range was already assembled with these very bytes: nothing was changed. */
  duplicate?: boolean;
  /** The content's bookkeeping is gone (completed or removed since the request read its record): nothing was changed. */
  gone?: boolean;
  /** Every byte of the content is received (each part stored, or covered by staged pieces): it completes once assembled. */
  allReceived?: boolean;
  /** Claims of others this commit took over because they had outlived their lease (their holder died or stalled). */
  takenOver?: ClaimKind[];
}

/** Counts, once its commit is applied, the claims it took over past their lease (content_claims_expired_total). */
export function countTakeovers(metrics: UploadMetrics, takenOver: ClaimKind[] | undefined): void {
  for (const claim of takenOver ?? []) metrics.claimsExpired.inc({ claim });
}

/**
 * In a commit: claims the assembly of every candidate part that is covered and not
 * yet stored, and the completion when every part is stored.
 */
export async function claimWork(
  view: BookView,
  total: number | null,
  candidates: number[],
  now: Date,
  leases: Leases,
  holder?: string,
): Promise<Work> {
  const assemblies: Assembly[] = [];
  const takenOver: ClaimKind[] = [];
  for (const k of candidates) {
    const part = await view.part(k);
    // The state's part list says what is stored (a part's own flag may lag after a half-written commit).
    if (
      view.state.parts[partKey(k)] ||
      (part.assembling && !isStale(part.assembling, leases.assemblyLeaseMs, now)) ||
      isBeingWritten(part, leases, now)
    )
      continue;
    const { start, end } = PartGrid.partRange(k, total);
    if (total !== null && start >= total) continue;
    if (!covers(part.pieces, { a: start, b: end }) || part.pieces.some((p) => p.kind !== 'staged')) continue;
    (view.state.covered ??= {})[partKey(k)] = true;
    // Here a claim still on the part is past its lease (checked above).
    if (part.assembling) takenOver.push('assembly');
    if (part.writing) takenOver.push('write');
    part.assembling = now;
    if (holder !== undefined) part.assemblingBy = holder;
    assemblies.push({ k, pieces: part.pieces });
  }
  const complete = assemblies.length === 0 && claimCompletion(view.state, total, now, leases, holder, takenOver);
  const work: Work = { assemblies, complete, total, allReceived: allReceived(view.state, total) };
  if (takenOver.length > 0) work.takenOver = takenOver;
  return work;
}

/** Whether every part of the content is stored, or covered by staged pieces (its assembly claimed at least once). */
export function allReceived(state: UploadState, total: number | null): boolean {
  if (total === null || total === 0) return false;
  const expected = PartGrid.partCount(total);
  for (let k = 1; k <= expected; k++) if (!state.parts[partKey(k)] && !state.covered?.[partKey(k)]) return false;
  return true;
}

/**
 * Claims whatever a content still needs done: the assembly of every covered part not stored yet
 * (stored parts are in the state) and the completion. Null when the total is not known or nothing
 * was received (or the bookkeeping is gone).
 */
export async function claimRemainingWork(
  view: BookView,
  recordTotal: number | null,
  now: Date,
  leases: Leases,
  holder: string,
): Promise<Work | null> {
  const total = recordTotal ?? view.state.total;
  // Marked for removal (expired or deleted): nothing more is assembled or completed.
  if (total === null || view.state.lastByte < 0 || view.state.expiring) return null;
  const candidates = Array.from({ length: PartGrid.partCount(total) }, (_, i) => i + 1).filter(
    (k) => !view.state.parts[partKey(k)],
  );
  return claimWork(view, total, candidates, now, leases, holder);
}

/**
 * Sets `completing` when every part is stored, nobody else completes and no removal is decided; true
 * for the claimant. A completion claim past its lease that it takes over is added to `takenOver`.
 */
export function claimCompletion(
  state: UploadState,
  total: number | null,
  now: Date,
  leases: Leases,
  holder?: string,
  takenOver?: ClaimKind[],
): boolean {
  if (total === null || total === 0 || state.expiring) return false;
  if (state.completing && !isStale(state.completing, leases.completionLeaseMs, now)) return false;
  const expected = PartGrid.partCount(total);
  for (let k = 1; k <= expected; k++) {
    const stored = state.parts[partKey(k)];
    const size = PartGrid.partRange(k, total).end - PartGrid.partRange(k, total).start + 1;
    if (!stored || stored.size !== size) return false;
  }
  if (state.completing) takenOver?.push('completion');
  state.completing = now;
  if (holder !== undefined) state.completingBy = holder;
  return true;
}

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
