import type { BookView } from './BookCommits';
import type { Piece, UploadState } from '../store/UploadBook';
import { covers } from './ByteRanges';
import { PartGrid, partKey } from './PartGrid';
import type { UploadMetrics } from './UploadMetrics';
import { isBeingWritten, isStale, type Leases } from './WriteAdmission';

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
