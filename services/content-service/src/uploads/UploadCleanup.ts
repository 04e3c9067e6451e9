// What is taken away, and when: DELETE of a content (ContentRemoval), the expiry of unfinished
// uploads (UploadExpiry, for the sweeper), uploads whose S3 side was lost (LostUploads), the
// discarding of an upload's S3 pieces (UploadCleanup), and claims released after a commit in doubt.
import { setTimeout as sleep } from 'node:timers/promises';
import { ServiceError } from '@cp/errors';
import { contentKey, PartGrid, partKey, stagingPrefix } from './PartGrid';
import { type UploadContext } from './UploadContext';
import { emptyPart, type UploadRecord, type UploadState } from '../store/UploadBook';
import { expired, isBeingWritten, isStale, isWithoutBookkeeping } from './WriteAdmission';
import { type BookView } from './BookCommits';

/**
 * DELETE of a content. A ready content is its object: deleted. An unfinished upload is aborted as
 * the sweeper expires one: a fenced commit marks it `expiring` (no later write is accepted, no
 * completion is claimed), then its multipart upload, staged pieces and bookkeeping go. While a live
 * request holds its completion claim, the removal waits for that completion to end (at most one
 * completion lease, within which a dead holder's claim runs out) and then deletes the finished
 * object; past that, 503 `contentCompleting`. Either way one outcome is left whole: the content
 * completed and then deleted, or aborted with nothing completed.
 */
export class ContentRemoval {
  constructor(
    private readonly ctx: UploadContext,
    private readonly expiry: UploadExpiry,
    private readonly cleanup: UploadCleanup,
  ) {}

  /** Removes the owner's content `id`; 404 `contentNotFound` when the owner has none of that id. */
  async remove(ownerId: string, id: string): Promise<void> {
    const { book, objects, events } = this.ctx;
    const key = contentKey(ownerId, id);
    const deadline = Date.now() + this.ctx.leases.completionLeaseMs;
    for (let pause = 20; ; pause = Math.min(2 * pause, 250)) {
      const record = await book.find(id);
      if (!record || record.ownerId !== ownerId) {
        const ready = await objects.head(key);
        if (!ready) throw ServiceError.of('contentNotFound', `there is no content ${id} of owner ${ownerId}`);
        // A completion acknowledged by a later request than the one that completed it (which died,
        // or lost S3 in between) may have its event unpublished: once the object is gone, the
        // dispatcher's check would take that completion as never having happened.
        await events.settle('content.completed', ownerId, id);
        const intent = await events.intend('content.deleted', ownerId, {
          id,
          size: ready.contentLength,
          'content-type': ready.contentType,
        });
        await objects.delete(key);
        await this.ctx.quotas.deleted(ownerId, id, ready.contentLength);
        await events.publish(intent);
        return;
      }
      const mark = await this.expiry.mark(record);
      if (mark.kind === 'marked') {
        const intent = await events.intend('content.deleted', ownerId, { id, size: mark.total });
        await this.cleanup.discard(record);
        // A completion whose holder died after S3 completed the object (its claim ran out, so the
        // mark was allowed): that object is this content too, and goes with it, after the event
        // of its completion.
        await events.settle('content.completed', ownerId, id);
        await objects.delete(key);
        await book.cleanupDone(id);
        await events.publish(intent);
        this.ctx.logger.info({ contentId: id }, 'an unfinished upload was deleted by its owner');
        return;
      }
      if (Date.now() > deadline)
        throw ServiceError.of(
          'contentCompleting',
          'the content is being completed right now; send the DELETE again in a moment to delete it',
        );
      // `gone`: completed (or removed) since its record was read, looked at again at once.
      if (mark.kind === 'completing') await sleep(pause);
    }
  }
}

/** What the sweeper needs of the uploads: expiry, and the cleanups completions left undone. */
export interface ExpiringUploads {
  expire(id: string): Promise<boolean>;
  pendingCleanups(limit: number): Promise<string[]>;
  finishCleanup(id: string): Promise<boolean>;
}

/** What marking an upload for removal found: marked (and whether a completion had been claimed), or why not. */
export type Mark =
  { kind: 'marked'; total: number | null; wasCompleting: boolean } | { kind: 'completing' } | { kind: 'gone' };

/** Expiry of abandoned uploads and the cleanup of completed ones, for the sweeper. */
export class UploadExpiry implements ExpiringUploads {
  constructor(
    private readonly ctx: UploadContext,
    private readonly cleanup: UploadCleanup,
  ) {}

  /**
   * Removes an upload whose time to live has run out, unless it has been written to or completed
   * since the sweeper read it. The decision is marked in its bookkeeping (a versioned commit), so
   * that no write after it is accepted and no completion runs.
   */
  async expire(id: string): Promise<boolean> {
    const { book, objects, clock, logger } = this.ctx;
    const record = await book.find(id);
    if (!record) {
      await book.remove(id); // an expiry entry without an upload
      return false;
    }
    if (record.expiresAt.getTime() >= clock().getTime()) {
      await book.extend(id, record.expiresAt); // the index lagged behind the record
      return false;
    }
    const claimed = await this.mark(record);
    if (claimed.kind !== 'marked') return false;
    // A completion whose CompleteMultipartUpload went through but whose request died before it
    // cleaned up: the object is whole in S3, and it is the content; only the staging goes.
    const finished = claimed.wasCompleting && claimed.total !== null ? await objects.head(record.s3Key) : null;
    if (finished && finished.contentLength === claimed.total) {
      await this.cleanup.afterCompletion(id);
      logger.warn({ contentId: id }, 'an expired upload was complete in S3: its staging removed, the content kept');
      return false;
    }
    const expired = { id, size: claimed.total, 'content-type': record.contentType };
    const intent = await this.ctx.events.intend('content.expired', record.ownerId, expired);
    await this.cleanup.discard(record);
    await this.ctx.events.publish(intent);
    this.ctx.metrics.swept.inc();
    return true;
  }

  /**
   * The fenced decision to remove an unfinished upload (expiry, or its owner's DELETE): a versioned
   * commit marks it `expiring`, after which no write is accepted and no completion is claimed.
   * Refused while a live request holds its completion claim; `gone` when it has no bookkeeping
   * any more (completed or removed since its record was read).
   */
  async mark(record: UploadRecord): Promise<Mark> {
    const { commits, clock, leases } = this.ctx;
    return commits.commit(record._id, async (view): Promise<Mark> => {
      const { completing } = view.state;
      if (view.state.version === 0) return { kind: 'gone' };
      if (completing && !isStale(completing, leases.completionLeaseMs, clock())) return { kind: 'completing' };
      // A covered part whose assembly is still at work: its UploadPart may land after the abort, and
      // an S3 server may then show the multipart upload again. Waited for as a
      // completion is (an assembly is short; a dead one's claim runs out within its lease).
      for (const key of Object.keys(view.state.covered ?? {})) {
        if (view.state.parts[key]) continue;
        const part = await view.part(Number(key.slice(1)));
        if (
          (part.assembling && !isStale(part.assembling, leases.assemblyLeaseMs, clock())) ||
          isBeingWritten(part, leases, clock())
        )
          return { kind: 'completing' };
      }
      view.state.expiring = clock();
      return { kind: 'marked', total: record.total ?? view.state.total, wasCompleting: completing !== null };
    });
  }

  /** Cleanups noted at completion that have not happened (their request failed or died). */
  async pendingCleanups(limit: number): Promise<string[]> {
    return this.ctx.book.pendingCleanups(limit);
  }

  /**
   * Deletes a completed content's staged objects and bookkeeping; false (nothing done) while its
   * completion runs or the content is still uploading (a completion that failed and may be tried
   * again). A content that is gone (swept) leaves nothing to delete but the note.
   */
  async finishCleanup(id: string): Promise<boolean> {
    const { book, objects, clock, leases } = this.ctx;
    const record = await book.find(id);
    if (record) {
      // A completion still at work (its claim renewed) cleans up itself.
      const { completing } = await book.state(id);
      if (completing && !isStale(completing, leases.completionLeaseMs, clock())) return false;
      if (!(await objects.head(record.s3Key))) return false;
    }
    await this.cleanup.afterCompletion(id);
    return true;
  }
}

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

/** Deletes what an upload leaves behind: its staged pieces and bookkeeping, or the whole unfinished content. */
export class UploadCleanup {
  constructor(private readonly ctx: UploadContext) {}

  /**
   * Removes everything of an unfinished content: its S3 upload, staged pieces, and last its
   * record and bookkeeping (which, when the content expired, keep refusing late writes until then).
   */
  async discard(record: UploadRecord): Promise<void> {
    const { objects, book, quotas } = this.ctx;
    // What the upload holds of its owner's quota: its total, or what the write that named it held.
    const held = record.total ?? (quotas.enabled ? ((await book.state(record._id)).held ?? 0) : 0);
    await objects.abortMultipartUpload(record.s3Key, record.uploadId);
    await objects.deletePrefix(stagingPrefix(record._id));
    await book.remove(record._id);
    await quotas.discarded(record.ownerId, record._id, held);
  }

  /** After a completion: the staged objects and the bookkeeping go, then the note that they must. */
  async afterCompletion(id: string): Promise<void> {
    await this.ctx.book.remove(id);
    await this.ctx.objects.deletePrefix(stagingPrefix(id));
    await this.ctx.book.cleanupDone(id);
  }
}

/**
 * The claim an aligned write (a streamed part, or a part a client put into S3 itself) holds on its
 * 64 MiB part while its bytes go in and are recorded (taken in RangeWriter's first commit).
 */

/** Renews the claim; false when it is no longer this writer's. */
export function renewPartWrite(ctx: UploadContext, id: string, k: number, writer: string): Promise<boolean> {
  return ctx.commits.commit(id, async (view) => {
    const part = await view.part(k);
    if (part.writing?.by !== writer) return false;
    part.writing = { since: ctx.clock(), by: writer };
    return true;
  });
}

/** Drops the claim when the write failed (best effort: the claim also runs out). */
export async function releasePartWrite(ctx: UploadContext, id: string, k: number, writer: string): Promise<void> {
  await ctx.commits
    .commit(id, async (view) => {
      const part = await view.part(k);
      if (part.writing?.by === writer) part.writing = null;
    })
    .catch((error: unknown) =>
      ctx.logger.warn(
        { contentId: id, part: k, err: error },
        'could not release the claim of a failed part write; it runs out',
      ),
    );
}

/**
 * After a commit whose outcome is unknown (Redis did not answer in time, yet may apply it once it
 * does, as after a pause): takes back every claim `writer` may hold on the upload (the completion,
 * and the writes and assemblies of `parts`), so that the next request need not wait out a lease.
 * Tried again every half second, in the background, for at most one lease: a claim older than that
 * runs out by itself. Never takes a claim of another holder.
 */
export function releaseInDoubt(ctx: UploadContext, id: string, writer: string, parts: number[]): void {
  const until = Date.now() + Math.max(ctx.leases.completionLeaseMs, ctx.leases.assemblyLeaseMs);
  const attempt = async (): Promise<void> => {
    for (;;) {
      try {
        await ctx.commits.commit(id, async (view) => {
          if (view.state.completing && view.state.completingBy === writer)
            Object.assign(view.state, { completing: null, completingBy: null });
          for (const k of parts) {
            const part = await view.part(k);
            if (part.writing?.by === writer) part.writing = null;
            if (part.assembling && part.assemblingBy === writer)
              Object.assign(part, { assembling: null, assemblingBy: null });
          }
        });
        return;
      } catch {
        if (Date.now() + 500 > until) return; // the claims run out by themselves
        await sleep(500);
      }
    }
  };
  void attempt();
}
