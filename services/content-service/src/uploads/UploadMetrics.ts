import { Counter, Histogram, Registry } from 'prom-client';

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
