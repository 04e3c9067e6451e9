import { setTimeout as sleep } from 'node:timers/promises';
import { ServiceError } from '@cp/errors';
import { contentKey } from './ObjectKeys';
import type { UploadCleanup } from './UploadCleanup';
import type { UploadContext } from './UploadContext';
import type { UploadExpiry } from './UploadExpiry';

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
