import { PassThrough } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Logger } from '@cp/logging';
import type { Claims } from '../store/Claims';
import type { ContentRecord } from '../store/ContentRepository';
import type { ObjectStore } from '../store/ObjectStore';
import { UploadLedger, type ReceivedRange } from '../store/UploadLedger';
import { covers } from './ByteRanges';
import { PartGrid } from './PartGrid';

/**
 * Turns staged pieces into S3 part k once they cover the whole of it: claims the assembly, streams
 * each piece's share of the part (ranged GETs, one after another) into UploadPart with the part's
 * exact length, records the part, then deletes pieces that no unassembled part still needs.
 */
export class PartAssembler {
  constructor(
    private readonly ledger: UploadLedger,
    private readonly objects: ObjectStore,
    private readonly claims: Claims,
    private readonly logger: Logger,
    private readonly leaseMs: number,
  ) {}

  /** Assembles part k if it is fully covered and not yet stored. Returns whether part k is stored now. */
  async assemble(record: ContentRecord, k: number, total: number | null, now: Date): Promise<boolean> {
    const id = record._id;
    if (await this.ledger.hasPart(id, k)) return true;
    const part = PartGrid.partRange(k, total);
    if (total !== null && part.start >= total) return false;
    const pieces = await this.ledger.overlapping(id, { a: part.start, b: part.end });
    if (!covers(pieces, { a: part.start, b: part.end })) return false;
    if (pieces.some((p) => p.kind !== 'staged' || p.key === null)) return false;

    const claimId = UploadLedger.partId(id, k);
    if (!(await this.claims.acquire(claimId, now, this.leaseMs))) return false;
    try {
      if (await this.ledger.hasPart(id, k)) return true;
      const length = part.end - part.start + 1;
      const body = new PassThrough({ highWaterMark: 1024 * 1024 });
      const feeding = this.feed(pieces, part, body);
      const [etag] = await Promise.all([this.objects.uploadPart(record.s3Key, record.uploadId!, k, body, length), feeding]);
      await this.ledger.putPart({ _id: claimId, contentId: id, k, etag, size: length, at: now });
    } finally {
      await this.claims.release(claimId);
    }
    await this.dropAssembledPieces(record, pieces).catch((error: unknown) => {
      this.logger.warn({ contentId: id, err: error }, 'could not delete assembled pieces; the sweeper will');
    });
    return true;
  }

  /** Writes each piece's bytes inside the part into `out`, in order. */
  private async feed(pieces: ReceivedRange[], part: { start: number; end: number }, out: PassThrough): Promise<void> {
    try {
      for (const piece of pieces) {
        const from = Math.max(piece.a, part.start);
        const to = Math.min(piece.b, part.end);
        if (from > to) continue;
        const stored = await this.objects.getRange(piece.key!, from - piece.a, to - piece.a);
        await pipeline(stored.body, out, { end: false });
      }
      out.end();
    } catch (error) {
      out.destroy(error as Error);
      throw error;
    }
  }

  private async dropAssembledPieces(record: ContentRecord, pieces: ReceivedRange[]): Promise<void> {
    for (const piece of pieces) {
      const first = PartGrid.partNumberAt(piece.a);
      const last = PartGrid.partNumberAt(piece.b);
      let allStored = true;
      for (let k = first; k <= last && allStored; k++) allStored = await this.ledger.hasPart(record._id, k);
      if (!allStored || piece.key === null) continue;
      await this.ledger.forgetPieceObject(piece._id, piece.key);
      await this.objects.delete(piece.key);
    }
  }
}
