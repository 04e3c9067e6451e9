import { PassThrough } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { UploadRecord } from '../store/UploadBook';
import type { ObjectStore } from '../store/ObjectStore';
import type { Piece } from '../store/UploadBook';
import { PartGrid } from './PartGrid';

/**
 * Streams the staged pieces that cover grid part k, each cut to its share of the part, one after
 * another into UploadPart k with the part's exact length. Nothing is buffered beyond the stream
 * windows. The caller has claimed the assembly and records the result.
 */
export class PartAssembler {
  constructor(private readonly objects: ObjectStore) {}

  /** `signal` (the assembly claim lost) aborts the reads and the UploadPart. */
  async assemble(
    record: UploadRecord,
    k: number,
    total: number | null,
    pieces: Piece[],
    signal?: AbortSignal,
  ): Promise<{ etag: string; size: number }> {
    const part = PartGrid.partRange(k, total);
    const size = part.end - part.start + 1;
    const body = new PassThrough({ highWaterMark: 1024 * 1024 });
    const feeding = this.feed(pieces, part, body, signal);
    const [etag] = await Promise.all([
      this.objects.uploadPart(record.s3Key, record.uploadId!, k, body, size, signal),
      feeding,
    ]);
    return { etag, size };
  }

  private async feed(
    pieces: Piece[],
    part: { start: number; end: number },
    out: PassThrough,
    signal?: AbortSignal,
  ): Promise<void> {
    try {
      for (const piece of [...pieces].sort((x, y) => x.a - y.a)) {
        const from = Math.max(piece.a, part.start);
        const to = Math.min(piece.b, part.end);
        if (from > to) continue;
        const stored = await this.objects.getRange(piece.key!, from - piece.a, to - piece.a, signal);
        await pipeline(stored.body, out, { end: false, signal });
      }
      out.end();
    } catch (error) {
      out.destroy(error as Error);
      throw error;
    }
  }
}
