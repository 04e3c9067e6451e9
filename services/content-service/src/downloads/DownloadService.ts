import { ServiceError } from '@cp/errors';
import { resolveRange, type RangeRequest } from '@cp/ranges';
import type { ContentRecord, ContentRepository } from '../store/ContentRepository';
import type { ObjectStore, StoredObject } from '../store/ObjectStore';
import type { UploadStatusReader } from '../uploads/UploadStatus';

export type ReadyContent = ContentRecord & { total: number };

/** What a download answers: the headers are decided before the first byte is read. */
export interface DownloadPlan {
  record: ReadyContent;
  /** 200 (whole content, or the API's own `bytes a-b/total` form) or 206 (RFC 9110 ranges). */
  status: 200 | 206;
  /** Inclusive byte range served; null for an empty content. */
  range: { start: number; end: number } | null;
  /** Whether to send Content-Range (any Range request). */
  withContentRange: boolean;
}

/** What HEAD tells a resuming client. */
export type ContentStatus =
  { state: 'ready'; record: ReadyContent } | { state: 'uploading'; record: ContentRecord; total: number | null; received: { a: number; b: number }[] };

/** Serves ready contents by byte range straight from S3, and the upload status of the others. */
export class DownloadService {
  constructor(
    private readonly contents: ContentRepository,
    private readonly objects: ObjectStore,
    private readonly uploads: UploadStatusReader,
  ) {}

  async status(ownerId: string, id: string): Promise<ContentStatus> {
    const record = await this.load(ownerId, id);
    if (record.state === 'ready') return { state: 'ready', record: record as ReadyContent };
    const { total, ranges } = await this.uploads.received(record);
    return { state: 'uploading', record, total, received: ranges };
  }

  async plan(ownerId: string, id: string, range: RangeRequest | null): Promise<DownloadPlan> {
    const record = await this.load(ownerId, id);
    if (record.state !== 'ready' || record.total === null) {
      throw ServiceError.of('contentNotReady');
    }
    const ready = record as ReadyContent;
    const total = ready.total;
    if (range === null) {
      return { record: ready, status: 200, range: total === 0 ? null : { start: 0, end: total - 1 }, withContentRange: false };
    }
    // An empty content has no byte to start a range at: any Range is one that starts at or past the end.
    const resolved = resolveRange(range, total);
    if (!resolved.satisfiable) {
      throw ServiceError.of(
        'rangeNotSatisfiable',
        total === 0
          ? 'the content is empty: no range of it can be served; GET it without Range'
          : `the content has ${total} bytes; the range starts past its end`,
        {
          headers: { 'Content-Range': `bytes */${total}` },
        },
      );
    }
    return { record: ready, status: range.form === 'legacy' ? 200 : 206, range: { start: resolved.start, end: resolved.end }, withContentRange: true };
  }

  async open(plan: DownloadPlan, signal: AbortSignal): Promise<StoredObject | null> {
    if (plan.range === null) return null;
    return this.objects.getRange(plan.record.s3Key, plan.range.start, plan.range.end, signal);
  }

  private async load(ownerId: string, id: string): Promise<ContentRecord> {
    const record = await this.contents.find(ownerId, id);
    if (!record) throw ServiceError.of('contentNotFound', `there is no content ${id} of owner ${ownerId}`);
    return this.uploads.finishIfComplete(record);
  }
}
