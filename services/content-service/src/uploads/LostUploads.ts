import { ServiceError } from '@cp/errors';
import type { UploadRecord, UploadState } from '../store/UploadBook';
import { emptyPart } from '../store/UploadBook';
import type { BookView } from './BookCommits';
import { PartGrid, partKey } from './PartGrid';
import type { UploadCleanup } from './UploadCleanup';
import type { UploadContext } from './UploadContext';
import { expired, isStale, isWithoutBookkeeping } from './WriteAdmission';

/**
 * An upload whose S3 multipart upload is gone while its bookkeeping still holds it: S3 answered a
 * completion "done" and shows no object, or refuses a part with NoSuchUpload. A storage server that
 * crashed in the middle of a completion can keep answering so for ever (versitygw's posix backend
 * renames the upload away first, and then answers every later completion "done" without an object).
 *
 * Nothing is acknowledged on such an answer. Once S3 has shown neither the upload nor the object for
 * a completion lease (a completion still running in S3 would have made its object by then), the
 * upload begins again in a new S3 multipart upload: the parts stored in the lost one are forgotten
 * (HEAD shows their ranges missing), staged pieces not yet assembled are kept, and the client is
 * told to send the missing ranges again (409 uploadRestarted).
 */
export class LostUploads {
  constructor(
    private readonly ctx: UploadContext,
    private readonly cleanup: UploadCleanup,
  ) {}

  /** The bookkeeping of a content S3 shows complete goes, unless a completion still at work does that itself. */
  private async finishCompleted(record: UploadRecord): Promise<void> {
    const { book, clock, leases, objects } = this.ctx;
    const state = await book.state(record._id);
    if (state.completing && !isStale(state.completing, leases.completionLeaseMs, clock())) return;
    const shown = await objects.head(record.s3Key);
    if (!shown || shown.contentLength !== (record.total ?? state.total)) return;
    await this.cleanup.afterCompletion(record._id);
    // The retry is answered "completed" from here on: its event goes out now, not at the dispatcher's check.
    await this.ctx.events
      .settle('content.completed', record.ownerId, record._id)
      .catch((error: unknown) =>
        this.ctx.logger.warn({ contentId: record._id, err: error }, 'could not publish the event of a completion yet'),
      );
  }

  /**
   * Called on S3's sign that the upload is lost, after the caller released its claims. Always
   * throws: 404 when the upload was removed meanwhile, 503 (retry) while the loss is younger than
   * a lease or a completion is under way, 409 uploadRestarted once the upload began again.
   */
  async recover(record: UploadRecord, sign: string): Promise<never> {
    const { commits, clock, leases, objects, logger } = this.ctx;
    if (await objects.head(record.s3Key)) {
      // Completed: by a completion S3 was still running, or by a holder that died before it
      // cleaned up. Its cleanup is done here (as the sweeper's would be), so that the retry finds
      // the content ready instead of waiting for the sweeper.
      await this.finishCompleted(record);
      throw ServiceError.of('contentCompleting', 'the content was completed meanwhile; send the range again');
    }
    const first = await commits.commit(record._id, async (view) => {
      const verdict = judge(view.state, record, clock(), leases.completionLeaseMs);
      if (verdict === 'lost' && !view.state.lostSince) {
        view.state.lostSince = clock();
        return 'wait';
      }
      return verdict;
    });
    if (first !== 'restart') throw refusal(first, record);
    const uploadId = await objects.createMultipartUpload(record.s3Key, record.contentType, metadataOf(record));
    let outcome: Verdict;
    try {
      outcome = await commits.commit(record._id, async (view) => {
        const verdict = judge(view.state, record, clock(), leases.completionLeaseMs);
        if (verdict === 'restart') await restart(view, record, uploadId);
        return verdict;
      });
    } catch (error) {
      await objects.abortMultipartUpload(record.s3Key, uploadId).catch(() => undefined);
      throw error;
    }
    if (outcome !== 'restart') {
      await objects.abortMultipartUpload(record.s3Key, uploadId).catch(() => undefined);
      throw refusal(outcome, record);
    }
    await objects.abortMultipartUpload(record.s3Key, record.uploadId).catch(() => undefined);
    this.ctx.metrics.uploadsRestarted.inc();
    logger.warn(
      { contentId: record._id, lost: sign },
      'S3 lost the multipart upload of an unfinished content; it begins again, and its client sends the stored ranges again',
    );
    throw ServiceError.of('uploadRestarted');
  }
}

/** The object metadata the lost upload was begun with (kept in the record: S3 has none to read back). */
function metadataOf(record: UploadRecord): Record<string, string> {
  return (
    record.metadata ?? {
      'created-at': record.createdAt.toISOString(),
      ...(record.uploader ? { uploader: encodeURIComponent(record.uploader) } : {}),
    }
  );
}

/**
 * In a commit that records bytes stored in S3 upload `record.uploadId`: refused (409
 * uploadRestarted) when the upload began again in another since the record was read.
 */
export function checkUploadInForce(state: UploadState, record: UploadRecord): void {
  if (state.uploadId && state.uploadId !== record.uploadId) throw ServiceError.of('uploadRestarted');
}

type Verdict = 'removed' | 'restarted' | 'completing' | 'lost' | 'wait' | 'restart';

/** What to do about a lost upload, from its bookkeeping. */
function judge(state: UploadState, record: UploadRecord, now: Date, leaseMs: number): Verdict {
  if (isWithoutBookkeeping(state) || state.expiring) return 'removed';
  // Another request began it again already (the record read by this one names the lost upload).
  if (state.uploadId && state.uploadId !== record.uploadId) return 'restarted';
  if (state.completing && !isStale(state.completing, leaseMs, now)) return 'completing';
  if (!state.lostSince) return 'lost';
  return isStale(state.lostSince, leaseMs, now) ? 'restart' : 'wait';
}

function refusal(verdict: Verdict, record: UploadRecord): ServiceError {
  if (verdict === 'removed') return expired(record._id);
  if (verdict === 'restarted') return ServiceError.of('uploadRestarted');
  return stillCompleting();
}

function stillCompleting(): ServiceError {
  return ServiceError.of(
    'contentCompleting',
    'S3 shows neither the upload of this content nor its object yet; retry in a moment',
  );
}

/**
 * In a commit: the upload goes on in S3 upload `uploadId`. Every part stored in the lost one is
 * forgotten with its claims; staged pieces of parts not yet stored stay (their objects are intact).
 */
async function restart(view: BookView, record: UploadRecord, uploadId: string): Promise<void> {
  const { state } = view;
  const total = record.total ?? state.total;
  const last = total !== null ? PartGrid.partCount(total) : PartGrid.partNumberAt(Math.max(0, state.lastByte));
  for (let k = 1; k <= last; k++) {
    const part = await view.part(k);
    const stored = part.stored || part.pieces.some((p) => p.kind === 'part') || !!state.parts[partKey(k)];
    if (stored) {
      Object.assign(part, emptyPart(record._id, k));
      delete state.covered?.[partKey(k)];
    } else Object.assign(part, { assembling: null, assemblingBy: null, writing: null });
  }
  // Parts still covered by staged pieces stay `covered`: their assembly is claimed again by the
  // request that receives the last missing bytes.
  Object.assign(state, { uploadId, lostSince: null, parts: {}, completing: null, completingBy: null });
}
