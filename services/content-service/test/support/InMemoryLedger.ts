import type { LedgerView } from '../../src/store/LedgerCommits';
import { emptyUploadState, UploadLedger, type PartRanges, type Piece, type UploadState } from '../../src/store/UploadLedger';

/**
 * The bookkeeping of uploads in memory, for unit tests of the rules that read and change it: it
 * hands out the same LedgerView a change gets under the content's lock (no lock, no database).
 */
export class InMemoryLedger {
  readonly states = new Map<string, UploadState>();
  readonly parts = new Map<string, PartRanges>();

  state(contentId: string): UploadState {
    let state = this.states.get(contentId);
    if (!state) this.states.set(contentId, (state = emptyUploadState(contentId)));
    return state;
  }

  part(contentId: string, k: number): PartRanges {
    const id = UploadLedger.partId(contentId, k);
    let part = this.parts.get(id);
    if (!part) this.parts.set(id, (part = { _id: id, contentId, k, pieces: [], stored: false, assembling: null }));
    return part;
  }

  view(contentId: string): LedgerView {
    return { state: this.state(contentId), part: async (k) => this.part(contentId, k) };
  }
}

export function staged(a: number, b: number): Piece {
  return { a, b, kind: 'staged', key: `staging/x/${a}-${b}.n`, sha256: null };
}

export function direct(a: number, b: number): Piece {
  return { a, b, kind: 'part', key: null, sha256: null };
}
