import { randomBytes } from 'node:crypto';
import type { ContentRecord } from '../store/ContentRepository';
import { mergeRanges, type ByteRange } from './ByteRanges';
import { PartGrid, partKey } from './PartGrid';
import type { UploadCompletion } from './UploadCompletion';
import type { UploadContext } from './UploadContext';
import { claimRemainingWork } from './WorkClaims';

/** What downloads need of the uploads: the status HEAD tells, and the repair of an unfinished completion. */
export interface UploadStatusReader {
  received(record: ContentRecord): Promise<{ total: number | null; ranges: ByteRange[] }>;
  finishIfComplete(record: ContentRecord): Promise<ContentRecord>;
}

/** An unfinished upload as readers see it: the bytes received, and a completion left undone finished. */
export class UploadStatus implements UploadStatusReader {
  constructor(
    private readonly ctx: UploadContext,
    private readonly completion: UploadCompletion,
  ) {}

  /** The received byte ranges of an unfinished content, for HEAD. */
  async received(record: ContentRecord): Promise<{ total: number | null; ranges: ByteRange[] }> {
    const state = await this.ctx.ledger.state(record._id);
    const ranges: ByteRange[] = [];
    for (let k = 1; k <= PartGrid.partNumberAt(Math.max(0, state.lastByte)) && state.lastByte >= 0; k++) {
      const stored = state.parts[partKey(k)];
      if (stored) {
        // a stored part holds all of its bytes; only parts still being filled are read
        const start = PartGrid.partRange(k, null).start;
        ranges.push({ a: start, b: start + stored.size - 1 });
        continue;
      }
      const part = await this.ctx.ledger.part(record._id, k, state);
      ranges.push(...part.pieces.map(({ a, b }) => ({ a, b })));
    }
    return { total: record.total ?? state.total, ranges: mergeRanges(ranges) };
  }

  /**
   * For readers: finishes what a crashed or failed request left undone (a covered part never
   * assembled, a completion never finished), once its lease has run out.
   */
  async finishIfComplete(record: ContentRecord): Promise<ContentRecord> {
    if (record.state === 'ready') return record;
    const { commits, clock, leases, contents } = this.ctx;
    const holder = randomBytes(6).toString('hex');
    const work = await commits.commit(record._id, (view) => claimRemainingWork(view, record.total, clock(), leases, holder));
    if (work) await this.completion.run(record, { ...work, replaced: undefined }, holder);
    return (await contents.find(record.ownerId, record._id)) ?? record;
  }
}
