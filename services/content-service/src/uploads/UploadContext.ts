import type { Readable } from 'node:stream';
import type { Logger } from '@cp/logging';
import type { ContentRange } from '@cp/protocol';
import type { BookCommits } from './BookCommits';
import type { ObjectStore } from '../store/ObjectStore';
import type { Presigner } from '../store/Presigner';
import type { UploadBook } from '../store/UploadBook';
import type { PartAssembler } from './PartAssembler';
import { type StageTimings, type UploadMetrics } from './UploadMetrics';
import type { OwnerQuotas } from '../quotas/OwnerQuotas';
import type { Leases } from './WriteAdmission';

import type { Clock } from '@cp/service-kit';
export type { Clock };

export interface UploadServiceOptions extends Leases {
  /** How long an unfinished upload lives after its last write before the sweeper removes it. */
  uploadTtlMs: number;
  clock?: Clock;
  /** How many assemblies may run after their requests answered, at once (default 4). */
  backgroundAssemblies?: number;
}

export interface UploadServiceDeps {
  /** The bookkeeping of unfinished uploads. */
  book: UploadBook;
  objects: ObjectStore;
  assembler: PartAssembler;
  logger: Logger;
  /** Counters for operators; a private registry when not given. */
  metrics?: UploadMetrics;
  /** Per-owner quotas; none checked when not given. */
  quotas?: OwnerQuotas;
  /** Presigned URLs for direct transfer; null (the default) when the operator did not enable it. */
  presigner?: Presigner | null;
  /** The events of completions, deletions and expiries; none when not given. */
  events?: ContentEvents;
}

/** A fact an event reports. */
export type ContentFact = 'content.completed' | 'content.deleted' | 'content.expired';

/** What an event says of its content, as far as known. */
export interface FactContent {
  id: string;
  size?: number | null;
  'content-type'?: string | null;
  'repr-digest'?: string | null;
}

/**
 * Events recorded with the facts they report: `intend` before the fact (when it fails the fact
 * must not happen: no fact without its event), `publish` after it (never fails; an intent left
 * unpublished is published once its fact is checked). The intent is opaque here.
 */
export interface ContentEvents {
  intend(fact: ContentFact, ownerId: string, content: FactContent): Promise<unknown>;
  publish(intent: unknown): Promise<void>;
  /**
   * Publishes now an event whose intent still waits, if its fact happened (checked now): before
   * a fact that would hide it, as a deletion hides a completion. Throws when that cannot be known.
   */
  settle(fact: ContentFact, ownerId: string, contentId: string): Promise<void>;
}

/** No events (no webhooks configured, or a test without them). */
export const NO_EVENTS: ContentEvents = {
  intend: async () => null,
  publish: async () => undefined,
  settle: async () => undefined,
};

/** What every unit of the upload machinery works with: the stores, the clock, the leases. */
export interface UploadContext {
  book: UploadBook;
  objects: ObjectStore;
  /** Changes to an upload's bookkeeping, by compare-and-set. */
  commits: BookCommits;
  logger: Logger;
  metrics: UploadMetrics;
  quotas: OwnerQuotas;
  events: ContentEvents;
  clock: Clock;
  leases: Leases;
  uploadTtlMs: number;
}

/** One write request: a POST (contentId null) or a PUT of a range, with its body. */
export interface WriteRequest {
  ownerId: string;
  contentId: string | null;
  /** Null for a one-shot POST of the whole content. */
  range: ContentRange | null;
  /** The body length the client announced; null for a chunked body. */
  declaredLength: number | null;
  contentType: string | null;
  /** Who sends it (`bearer:<sub>`, `session:<user>`); kept with the content. */
  uploader?: string | null;
  /** The SHA-1 thumbprint of the certificate its session signed in with; kept with the content. */
  uploaderCertificate?: string | null;
  body: Readable;
  /** The SHA-256 its Content-Digest names for the body (checked before the body is kept); null without one. */
  sha256?: Buffer | null;
  /** The CRC-64/NVME its Content-Digest names (checked by S3, when it checks checksums, and no SHA-256 is named). */
  crc64nvme?: Buffer | null;
  /** Where the request's time goes (its Server-Timing header); none for internal callers. */
  timings?: StageTimings;
  /** More S3 user metadata for the finished object, given when the content is created (ASCII). */
  metadata?: Record<string, string>;
}

/** A new content of `total` bytes (null: not known yet) that gets its bytes by later writes. */
export interface BeginRequest {
  ownerId: string;
  total: number | null;
  contentType: string | null;
  uploader?: string | null;
  uploaderCertificate?: string | null;
  /** More S3 user metadata for the finished object (ASCII names and values). */
  metadata?: Record<string, string>;
}

export interface WriteOutcome {
  id: string;
  /** True when this request completed the content (a PUT answers 201). */
  completedNow: boolean;
  /** Whether the content is ready after this request. */
  completed: boolean;
}
