import { formatDigest } from '@cp/protocol';
import type { ObjectStore } from '../store/ObjectStore';
import type { UploadBook } from '../store/UploadBook';
import { contentKey } from '../uploads/PartGrid';
import type { FactSeen } from './events';
import type { Intent } from './Outbox';

/**
 * Whether the fact of an intent left unpublished (its writer died, or Redis failed at the
 * publication) has happened, from the content's record: completed when its object exists;
 * deleted or expired when neither its object nor its upload is left. A fact not seen yet may
 * still happen (a request still running): looked at again until the intent's window is over.
 */
export class ContentFacts {
  constructor(
    private readonly objects: Pick<ObjectStore, 'head'>,
    private readonly book: Pick<UploadBook, 'find'>,
  ) {}

  async check(intent: Intent): Promise<FactSeen> {
    const ready = await this.objects.head(contentKey(intent.owner, intent.content.id));
    if (intent.type === 'content.completed') {
      if (!ready) return { happened: false };
      const digests = Object.keys(ready.digests).length > 0 ? formatDigest(ready.digests) : null;
      return {
        happened: true,
        content: { size: ready.contentLength, 'content-type': ready.contentType, 'repr-digest': digests },
      };
    }
    if (ready || (await this.book.find(intent.content.id))) return { happened: false };
    return { happened: true, content: {} };
  }
}
