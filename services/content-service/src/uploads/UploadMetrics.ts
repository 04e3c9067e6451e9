// What the uploads measure: the service's upload metrics and the stage timings of one request
// (its Server-Timing header).
import { type RequestHandler, type Response } from 'express';
import { performance } from 'node:perf_hooks';
import { inSpan } from '@cp/tracing';
import { Counter, Histogram, Registry } from 'prom-client';

/** The stages a write's time is spent in, as named in its Server-Timing header. */
export type Stage = 'auth' | 'record' | 'lock' | 'commit' | 'stage' | 'part' | 'assembly' | 'complete';

/**
 * Where one request's time went, by stage, answered as a Server-Timing header (RFC 8673's
 * `name;dur=ms`), so that a client or a benchmark sees the share of each without a profiler.
 * Stages may overlap (a commit batched with other requests' changes counts for each of them).
 */
export class StageTimings {
  private readonly startedAt = performance.now();
  private readonly spent = new Map<Stage, number>();

  add(stage: Stage, ms: number): void {
    this.spent.set(stage, (this.spent.get(stage) ?? 0) + ms);
  }

  /** Runs `work`, counting its time (failed or not) to `stage`; when tracing, as a span `upload <stage>`. */
  async time<T>(stage: Stage, work: () => Promise<T>): Promise<T> {
    const t = performance.now();
    try {
      return await inSpan(`upload ${stage}`, undefined, work);
    } finally {
      this.add(stage, performance.now() - t);
    }
  }

  /** The Server-Timing value: each stage spent in, then `total` (since the request reached the service). */
  header(): string {
    const parts = [...this.spent].map(([stage, ms]) => `${stage};dur=${ms.toFixed(2)}`);
    parts.push(`total;dur=${(performance.now() - this.startedAt).toFixed(2)}`);
    return parts.join(', ');
  }
}

/** Starts a request's timings (first on the /v1 routes, so that `total` covers authentication too). */
export const startTimings: RequestHandler = (_req, res, next) => {
  res.locals.timings = new StageTimings();
  next();
};

/** The request's timings (a detached set when none were started, e.g. in tests of a router alone). */
export function timingsOf(res: Response): StageTimings {
  const timings: unknown = res.locals.timings;
  return timings instanceof StageTimings ? timings : (res.locals.timings = new StageTimings());
}

/** What the upload machinery did, for operators: parts stored and how, staging, completions, sweeps. */
export class UploadMetrics {
  /**
   * Grid parts written to S3: `direct` (an aligned range streamed into UploadPart), `assembled` from
   * staged pieces, or `presigned` (sent straight to S3 by the client, then recorded).
   */
  readonly partsStored: Counter<'via'>;
  readonly piecesStaged: Counter;
  readonly stagedBytes: Counter;
  readonly assemblySeconds: Histogram;
  readonly completed: Counter;
  readonly swept: Counter;
  readonly uploadsRestarted: Counter;
  /** Claims (a part write, an assembly, the completion) found past their lease and taken over. */
  readonly claimsExpired: Counter<'claim'>;

  constructor(registry: Registry = new Registry()) {
    const registers = [registry];
    this.partsStored = new Counter({
      name: 'content_parts_stored_total',
      help: 'S3 parts written, by how: direct, assembled from staged pieces, or presigned (sent to S3 by the client)',
      labelNames: ['via'],
      registers,
    });
    this.piecesStaged = new Counter({
      name: 'content_pieces_staged_total',
      help: 'Unaligned ranges stored as staged objects',
      registers,
    });
    this.stagedBytes = new Counter({
      name: 'content_staged_bytes_total',
      help: 'Bytes written to staged objects',
      registers,
    });
    this.assemblySeconds = new Histogram({
      name: 'content_part_assembly_seconds',
      help: 'Time to assemble one S3 part from its staged pieces',
      buckets: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 120],
      registers,
    });
    this.completed = new Counter({
      name: 'content_uploads_completed_total',
      help: 'Multipart contents completed (CompleteMultipartUpload)',
      registers,
    });
    this.swept = new Counter({
      name: 'content_uploads_swept_total',
      help: 'Unfinished uploads removed after their time to live',
      registers,
    });
    this.uploadsRestarted = new Counter({
      name: 'content_uploads_restarted_total',
      help: 'Unfinished uploads begun again in a new S3 multipart upload because S3 lost the first (see operations.md)',
      registers,
    });
    this.claimsExpired = new Counter({
      name: 'content_claims_expired_total',
      help: 'Claims on an upload (a part write, an assembly, the completion) taken over after their lease ran out: their holder died or stalled',
      labelNames: ['claim'],
      registers,
    });
    // Every kind shown from the start, so that a rule's increase() sees the first takeover.
    for (const claim of ['write', 'assembly', 'completion']) this.claimsExpired.inc({ claim }, 0);
  }
}
