import { ServiceError } from '@cp/errors';
import type { ContentRange } from '@cp/protocol';
import { unquote } from '../store/ObjectStore';
import type { PresignedRequest, Presigner } from '../store/Presigner';
import type { UploadRecord } from '../store/UploadBook';
import { classifyRange, contentKey, PartGrid } from './PartGrid';
import type { RangeWriter } from './RangeWriter';
import { StageTimings } from './UploadMetrics';
import type { UploadContext, WriteOutcome } from './UploadContext';
import { expired } from './WriteAdmission';

/** A part a client asks to send straight to S3, with the SHA-256 it will carry (S3 checks it). */
export interface DirectPartRequest {
  part: number;
  sha256?: Buffer;
}

export interface DirectPartTarget extends PresignedRequest {
  part: number;
}

/**
 * Direct transfer of parts (when the operator enabled it): presigned UploadPart URLs for grid
 * parts of an unfinished content, each bound to its part's exact length (and SHA-256), and the
 * recording of a part the client sent there. A recorded direct part is an aligned part like any
 * other: the same claim, the same compare-and-set commit (RangeWriter), the same completion.
 */
export class DirectParts {
  constructor(
    private readonly ctx: UploadContext,
    private readonly ranges: RangeWriter,
    /** Null when direct transfer is not enabled. */
    private readonly presigner: Presigner | null,
  ) {}

  get enabled(): boolean {
    return this.presigner !== null;
  }

  /** Presigned UploadPart requests for the named parts (1-based grid parts; the content's total must be known). */
  async targets(ownerId: string, contentId: string, parts: DirectPartRequest[]): Promise<DirectPartTarget[]> {
    const presigner = this.requirePresigner();
    const { record, total } = await this.upload(ownerId, contentId);
    const state = await this.ctx.book.state(contentId);
    if (state.expiring) throw expired(contentId);
    const out: DirectPartTarget[] = [];
    for (const { part, sha256 } of parts) {
      const { start, end } = partOf(part, total);
      // A part that holds ranges sent in pieces could not be recorded whole: said before its bytes travel.
      const held = await this.ctx.book.part(contentId, part);
      if (classifyRange({ a: start, b: end }, held.pieces) === 'overlap')
        throw ServiceError.of(
          'rangeOverlap',
          `part ${part} already holds ranges sent through the service; send its missing bytes the same way`,
        );
      const request = await presigner.uploadPart(record.s3Key, record.uploadId, part, end - start + 1, sha256);
      out.push({ part, ...request });
    }
    return out;
  }

  /**
   * Records part k as sent straight to S3 with that ETag: checked with ListParts under the part's
   * write claim, then committed as a streamed aligned part is; the request that records the
   * content's last part completes it (`completedNow`: its 201).
   */
  async confirm(
    ownerId: string,
    contentId: string,
    k: number,
    etag: string,
    timings = new StageTimings(),
  ): Promise<WriteOutcome> {
    this.requirePresigner();
    const { record, total } = await this.upload(ownerId, contentId);
    const { start, end } = partOf(k, total);
    const range: ContentRange = { start, end, total };
    return this.ranges.write(record, range, { etag: `"${unquote(etag)}"` }, false, timings);
  }

  private requirePresigner(): Presigner {
    if (!this.presigner) throw ServiceError.of('directTransferDisabled');
    return this.presigner;
  }

  /** The owner's unfinished upload and its total: 409 when complete or the total is unknown, 404 when none. */
  private async upload(ownerId: string, contentId: string): Promise<{ record: UploadRecord; total: number }> {
    const { book, objects } = this.ctx;
    const record = await book.find(contentId);
    if (!record || record.ownerId !== ownerId) {
      if (!record && (await objects.head(contentKey(ownerId, contentId))))
        throw ServiceError.of('contentAlreadyComplete', 'the content is complete: it takes no more parts');
      throw ServiceError.of('contentNotFound', `there is no content ${contentId} of owner ${ownerId}`);
    }
    const total = record.total ?? (await book.state(contentId)).total;
    if (total === null) throw ServiceError.of('totalUnknown');
    return { record, total };
  }
}

/** Part k's byte range in a content of `total` bytes; 400 for a part the content does not have. */
function partOf(k: number, total: number): { start: number; end: number } {
  const count = PartGrid.partCount(total);
  if (!Number.isSafeInteger(k) || k < 1 || k > count)
    throw ServiceError.of('invalidDirectParts', `part ${k} is not a part of this content: it has parts 1 to ${count}`);
  return PartGrid.partRange(k, total);
}
