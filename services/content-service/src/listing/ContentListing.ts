import { ServiceError } from '@cp/errors';
import type { ObjectStore } from '../store/ObjectStore';
import type { UploadBook } from '../store/UploadBook';
import { contentKey } from '../uploads/PartGrid';
import { formatDigest } from '@cp/protocol';
import { objectFacts } from '../receipts/ContentReceipts';

/** One content of a listing (openapi.yaml `ContentListItem`). */
export interface ListedContent {
  id: string;
  state: 'ready' | 'uploading';
  /** Its length; while uploading, the total once some request named it, else null. */
  size: number | null;
  'content-type': string;
  'created-at': string | null;
  /** Null while uploading. */
  'completed-at': string | null;
  /** The whole content's digests as its `Repr-Digest` names them (RFC 9530 field value); null while uploading. */
  'repr-digest': string | null;
  uploader: string | null;
}

export interface ContentPage {
  items: ListedContent[];
  'next-cursor': string | null;
}

export const MAX_PAGE = 1000;
/** How many HeadObjects (or upload lookups) of one page run at once. */
const LOOKUPS_IN_FLIGHT = 16;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * An owner's contents in id order, a page at a time: the ready ones from S3 (ListObjectsV2 under
 * `contents/{owner}/`, one HeadObject each for what the listing lacks), the unfinished ones from the
 * owner's index of uploads. Both are read from the cursor on, so a page costs the same whatever
 * other owners hold. The uploads are read first: a content completing meanwhile is then found by
 * the S3 listing (or by a HeadObject when its upload record is gone), and shows once, ready.
 */
export class ContentListing {
  constructor(
    private readonly objects: ObjectStore,
    private readonly book: UploadBook,
  ) {}

  async page(ownerId: string, limit: number, cursor: string | null): Promise<ContentPage> {
    const after = cursor === null ? null : decodeCursor(cursor);
    const uploads = await this.book.ownedUploads(ownerId, after, limit);
    const prefix = contentKey(ownerId, '');
    const listed = await this.objects.listKeys(prefix, after === null ? undefined : prefix + after, limit);
    const ready = listed.keys.map((key) => key.slice(prefix.length));
    // What is known for certain: every id up to the last each source gave, when it may hold more.
    const bounds = [
      ...(listed.truncated ? [ready[ready.length - 1]!] : []),
      ...(uploads.length === limit ? [uploads[uploads.length - 1]!] : []),
    ].sort();
    let bound: string | null = bounds[0] ?? null;
    let ids = [...new Set([...ready, ...uploads])].filter((id) => bound === null || id <= bound).sort();
    if (ids.length > limit) {
      ids = ids.slice(0, limit);
      bound = ids[limit - 1]!;
    }
    const readySet = new Set(ready);
    const items = await inFlight(ids, LOOKUPS_IN_FLIGHT, (id) =>
      readySet.has(id) ? this.readyItem(ownerId, id) : this.uploadingItem(ownerId, id),
    );
    return { items: items.filter((i) => i !== null), 'next-cursor': bound === null ? null : encodeCursor(bound) };
  }

  /** A ready content as its object says; null when it was deleted since it was listed. */
  private async readyItem(ownerId: string, id: string): Promise<ListedContent | null> {
    if (!UUID.test(id)) return null; // not a content's key
    const info = await this.objects.head(contentKey(ownerId, id));
    if (!info) return null;
    const facts = objectFacts(info);
    return {
      id,
      state: 'ready',
      size: facts.size,
      'content-type': facts['content-type'],
      'created-at': facts['created-at'],
      'completed-at': facts['completed-at'],
      'repr-digest': Object.keys(info.digests).length > 0 ? formatDigest(info.digests) : null,
      uploader: facts.uploader,
    };
  }

  /** An unfinished upload from its record; ready when it completed since the index was read; null when gone. */
  private async uploadingItem(ownerId: string, id: string): Promise<ListedContent | null> {
    const record = await this.book.find(id);
    if (!record || record.ownerId !== ownerId) return this.readyItem(ownerId, id);
    const total = record.total ?? (await this.book.state(id)).total;
    return {
      id,
      state: 'uploading',
      size: total,
      'content-type': record.contentType,
      'created-at': record.createdAt.toISOString(),
      'completed-at': null,
      'repr-digest': null,
      uploader: record.uploader,
    };
  }
}

/** The cursor is the last id a page accounted for, opaque to clients (base64url). */
function encodeCursor(id: string): string {
  return Buffer.from(id, 'utf8').toString('base64url');
}

function decodeCursor(cursor: string): string {
  const id = /^[A-Za-z0-9_-]{1,64}$/.test(cursor) ? Buffer.from(cursor, 'base64url').toString('utf8') : '';
  if (!UUID.test(id)) throw ServiceError.of('invalidCursor');
  return id;
}

/** Runs `work` over `items`, at most `limit` at a time, keeping their order. */
async function inFlight<T, R>(items: T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        results[i] = await work(items[i]!);
      }
    }),
  );
  return results;
}
