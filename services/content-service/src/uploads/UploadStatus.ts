import { randomBytes } from 'node:crypto';
import { ServiceError } from '@cp/errors';
import { StaleBookRead, type UploadRecord } from '../store/UploadBook';
import { mergeRanges, type ByteRange } from './ByteRanges';
import { PartGrid, partKey } from './PartGrid';
import type { UploadCompletion } from './UploadCompletion';
import type { UploadContext } from './UploadContext';
import { claimRemainingWork, countTakeovers } from './WorkClaims';

/** What downloads need of the uploads, on their miss path (no object yet): the upload, what it received, and a repair. */
export interface UploadStatusReader {
  /** The owner's unfinished upload of that id; null when there is none. */
  find(ownerId: string, id: string): Promise<UploadRecord | null>;
  received(record: UploadRecord): Promise<{ total: number | null; ranges: ByteRange[] }>;
  /** True when the content is complete now. */
  finishIfComplete(record: UploadRecord): Promise<boolean>;
}

/** An unfinished upload as readers see it: the bytes received, and a completion left undone finished. */
export class UploadStatus implements UploadStatusReader {
  constructor(
    private readonly ctx: UploadContext,
    private readonly completion: UploadCompletion,
  ) {}

  async find(ownerId: string, id: string): Promise<UploadRecord | null> {
    const record = await this.ctx.book.find(id);
    return record?.ownerId === ownerId ? record : null;
  }

  /** The received byte ranges of an unfinished content, for HEAD (read again when a write moved it on meanwhile). */
  async received(record: UploadRecord): Promise<{ total: number | null; ranges: ByteRange[] }> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.readReceived(record);
      } catch (error) {
        if (!(error instanceof StaleBookRead) || attempt === 5) throw error;
      }
    }
  }

  private async readReceived(record: UploadRecord): Promise<{ total: number | null; ranges: ByteRange[] }> {
    const { book } = this.ctx;
    const state = await book.state(record._id);
    const ranges: ByteRange[] = [];
    for (let k = 1; k <= PartGrid.partNumberAt(Math.max(0, state.lastByte)) && state.lastByte >= 0; k++) {
      const stored = state.parts[partKey(k)];
      if (stored) {
        // a stored part holds all of its bytes; only parts still being filled are read
        const start = PartGrid.partRange(k, null).start;
        ranges.push({ a: start, b: start + stored.size - 1 });
        continue;
      }
      const part = await book.part(record._id, k, state.version);
      ranges.push(...part.pieces.map(({ a, b }) => ({ a, b })));
    }
    return { total: record.total ?? state.total, ranges: mergeRanges(ranges) };
  }

  /**
   * For readers: finishes what a crashed or failed request left undone (a covered part never
   * assembled, a completion never finished), once its lease has run out.
   */
  async finishIfComplete(record: UploadRecord): Promise<boolean> {
    const { commits, clock, leases } = this.ctx;
    const holder = randomBytes(6).toString('hex');
    const work = await commits.commit(record._id, (view) =>
      claimRemainingWork(view, record.total, clock(), leases, holder),
    );
    if (!work) return false;
    countTakeovers(this.ctx.metrics, work.takenOver);
    try {
      return await this.completion.run(record, { ...work, replaced: undefined }, holder);
    } catch (error) {
      // S3 lost the upload (LostUploads): to a reader, the content is still unfinished.
      if (error instanceof ServiceError && ['uploadRestarted', 'contentCompleting'].includes(error.code)) return false;
      throw error;
    }
  }
}
