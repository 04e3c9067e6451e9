import type { ObjectStore } from '../store/ObjectStore';
import type { QuotaLimits, QuotaUsage, RedisQuotas } from '../store/RedisQuotas';
import type { UploadBook } from '../store/UploadBook';
import { contentKey } from '../uploads/PartGrid';

/** What a reconciliation found for one owner. */
export interface QuotaReport {
  ownerId: string;
  limits: QuotaLimits;
  /** The counters as the requests had kept them. */
  counted: QuotaUsage;
  /** What S3 and the bookkeeping hold: ready contents' bytes, and unfinished uploads' declared totals. */
  actual: QuotaUsage;
  /** The counters after the correction (actual, plus what requests counted while it ran). */
  after: QuotaUsage;
  contents: number;
  uploads: number;
}

const PAGE = 1000;

/**
 * Recounts an owner's storage from the truth: its ready contents listed in S3 under
 * `contents/{owner}/` (sizes from the listing, a page of 1,000 at a time) and its unfinished
 * uploads from its index in the bookkeeping, then corrects the counters by the difference. Its
 * cost grows with that owner's contents only; it runs from the admin command line, or in the
 * background after a refusal (QuotaRecounts), never on a request's own path.
 */
export class QuotaReconciler {
  constructor(
    private readonly objects: ObjectStore,
    private readonly book: UploadBook,
    private readonly quotas: RedisQuotas,
  ) {}

  async reconcile(ownerId: string): Promise<QuotaReport> {
    const { limits, usage: counted } = await this.quotas.read(ownerId);
    let used = 0;
    let contents = 0;
    const prefix = contentKey(ownerId, '');
    for (let startAfter: string | undefined; ;) {
      const page = await this.objects.listKeys(prefix, startAfter, PAGE);
      for (const size of page.sizes) used += size;
      contents += page.keys.length;
      if (!page.truncated || page.keys.length === 0) break;
      startAfter = page.keys[page.keys.length - 1];
    }
    let reserved = 0;
    let uploads = 0;
    for (let after: string | null = null; ;) {
      const ids = await this.book.ownedUploads(ownerId, after, PAGE);
      for (const id of ids) {
        const record = await this.book.find(id);
        if (!record || record.ownerId !== ownerId) continue; // completed or removed meanwhile
        // Begun without a total: what the write that named it holds (none yet: nothing).
        reserved += record.total ?? (await this.book.state(id)).held ?? 0;
        uploads += 1;
      }
      if (ids.length < PAGE) break;
      after = ids[ids.length - 1]!;
    }
    const actual = { used, reserved };
    const after = await this.quotas.correct(ownerId, counted, actual);
    return { ownerId, limits, counted, actual, after, contents, uploads };
  }
}
