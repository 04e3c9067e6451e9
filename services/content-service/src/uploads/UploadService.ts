import { randomBytes, randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import { ServiceError } from '@cp/errors';
import type { Logger } from '@cp/logging';
import type { ContentRange } from '@cp/ranges';
import type { ContentRecord, ContentRepository } from '../store/ContentRepository';
import { LedgerCommits, type LedgerView } from '../store/LedgerCommits';
import type { Locks } from '../store/Locks';
import { isNotFound, unquote, type ObjectStore } from '../store/ObjectStore';
import { emptyUploadState, stagedKey, stagingPrefix, type PartRanges, type PendingCleanup, type Piece, type UploadLedger, type UploadState } from '../store/UploadLedger';
import { classifyRange, covers, mergeRanges, type ByteRange } from './ByteRanges';
import { exactBody, pipeInto } from './exactBody';
import { BodyLengthMismatch } from './ExactLengthStream';
import { HashingStream } from './HashingStream';
import type { PartAssembler } from './PartAssembler';
import { UploadMetrics } from './UploadMetrics';
import { MAX_CONTENT_SIZE, PART_SIZE, PartGrid, partKey } from './PartGrid';
import { streamsEqual } from './streamsEqual';

export type Clock = () => Date;

export interface UploadServiceOptions {
  /** How long an unfinished upload lives after its last write before the sweeper removes it. */
  uploadTtlMs: number;
  /** How long a completion may stay claimed before another request takes it over. */
  completionLeaseMs: number;
  /** How long a part's assembly may stay claimed before another request takes it over. */
  assemblyLeaseMs: number;
  clock?: Clock;
}

export interface UploadServiceDeps {
  contents: ContentRepository;
  ledger: UploadLedger;
  objects: ObjectStore;
  assembler: PartAssembler;
  locks: Locks;
  logger: Logger;
  /** Counters for operators; a private registry when not given. */
  metrics?: UploadMetrics;
}


interface Assembly {
  k: number;
  pieces: Piece[];
}

/** What a request claimed under the content's lock, to do after releasing it. */
interface Work {
  assemblies: Assembly[];
  complete: boolean;
  total: number | null;
  /** The piece replaced by a retry of the same range (its object is deleted). */
  replaced?: Piece;
  /** The range was already assembled with these very bytes: nothing was changed. */
  duplicate?: boolean;
  /** The content's bookkeeping is gone (completed or removed since the request read its record): nothing was changed. */
  gone?: boolean;
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
  body: Readable;
}

export interface WriteOutcome {
  id: string;
  /** True when this request completed the content (a PUT answers 201). */
  completedNow: boolean;
  /** Whether the content is ready after this request. */
  completed: boolean;
}

const DEFAULT_CONTENT_TYPE = 'application/octet-stream';

/**
 * Takes uploads. A range that is exactly a grid part streams straight into UploadPart; any other
 * range is staged in S3 and assembled into its part once the part is covered. Completion is
 * claimed under the content's lock, so exactly one request completes a content.
 */
export class UploadService {
  private readonly clock: Clock;
  private readonly contents: ContentRepository;
  private readonly ledger: UploadLedger;
  private readonly objects: ObjectStore;
  private readonly assembler: PartAssembler;
  private readonly commits: LedgerCommits;
  private readonly logger: Logger;
  readonly metrics: UploadMetrics;

  constructor(
    deps: UploadServiceDeps,
    private readonly options: UploadServiceOptions,
  ) {
    ({ contents: this.contents, ledger: this.ledger, objects: this.objects, assembler: this.assembler, logger: this.logger } = deps);
    this.metrics = deps.metrics ?? new UploadMetrics();
    this.commits = new LedgerCommits(this.ledger, deps.locks, lockName);
    this.clock = options.clock ?? (() => new Date());
  }

  async write(request: WriteRequest): Promise<WriteOutcome> {
    if (request.range === null) {
      if (request.contentId !== null) throw ServiceError.badRequest('missingContentRange', 'Content-Range is required on PUT');
      if (request.declaredLength !== null && request.declaredLength > PART_SIZE) {
        throw new ServiceError(413, 'partTooLarge', `a single-request upload may carry at most ${PART_SIZE} bytes; send larger contents in parts with Content-Range`);
      }
      return this.storeWhole(request, request.declaredLength);
    }
    const { start, end, total } = request.range;
    const length = end - start + 1;
    if (length > PART_SIZE) throw new ServiceError(413, 'partTooLarge', `a part may carry at most ${PART_SIZE} bytes; this one carries ${length}`);
    if (total !== null && total > MAX_CONTENT_SIZE) throw new ServiceError(413, 'contentTooLarge', `a content may be at most ${MAX_CONTENT_SIZE} bytes`);
    if (end >= MAX_CONTENT_SIZE) throw new ServiceError(413, 'contentTooLarge', `byte ${end} lies past the content limit of ${MAX_CONTENT_SIZE} bytes`);
    if (request.declaredLength !== null && request.declaredLength !== length) {
      throw ServiceError.badRequest('bodyLengthMismatch', `Content-Length ${request.declaredLength} differs from the ${length} bytes Content-Range names`);
    }
    if (request.contentId === null) {
      if (start === 0 && total !== null && end === total - 1) return this.storeWhole(request, total);
      return this.createWithRange(request, request.range);
    }
    const record = await this.requireRecord(request.ownerId, request.contentId);
    if (record.state === 'ready') return this.rewriteReady(request.body, record, request.range);
    return this.receive(record, request.range, request.body, false);
  }

  /** The whole content in one request, stored with one PutObject. */
  private async storeWhole(request: WriteRequest, knownTotal: number | null): Promise<WriteOutcome> {
    const id = randomUUID();
    const contentType = request.contentType ?? DEFAULT_CONTENT_TYPE;
    const s3Key = contentKey(request.ownerId, id);
    let etag: string;
    let total: number;
    if (knownTotal !== null) {
      etag = await this.objects.putObject(s3Key, exactBody(request.body, knownTotal), knownTotal, contentType);
      total = knownTotal;
    } else {
      // A chunked body without Content-Range: its length is known only at its end.
      const counted = exactBody(request.body, PART_SIZE, true);
      try {
        etag = await this.objects.putObjectOfUnknownLength(s3Key, counted, contentType);
      } catch (error) {
        if (error instanceof BodyLengthMismatch && error.overflow) {
          throw new ServiceError(413, 'partTooLarge', `a single-request upload may carry at most ${PART_SIZE} bytes; send larger contents in parts with Content-Range`);
        }
        throw error;
      }
      total = counted.bytesSeen;
    }
    const now = this.clock();
    try {
      await this.contents.insert({ ...this.newRecord(id, request.ownerId, contentType, s3Key, null, total, now), state: 'ready', etag, completedAt: now });
    } catch (error) {
      // No record, no content: the object would be unreachable.
      await this.objects.delete(s3Key).catch(() => undefined);
      throw error;
    }
    return { id, completedNow: true, completed: true };
  }

  /** POST of a range: a new multipart content that exists only if its first range is stored. */
  private async createWithRange(request: WriteRequest, range: ContentRange): Promise<WriteOutcome> {
    const id = randomUUID();
    const contentType = request.contentType ?? DEFAULT_CONTENT_TYPE;
    const s3Key = contentKey(request.ownerId, id);
    const uploadId = await this.objects.createMultipartUpload(s3Key, contentType);
    const record = this.newRecord(id, request.ownerId, contentType, s3Key, uploadId, range.total, this.clock());
    try {
      await this.contents.insert(record);
    } catch (error) {
      await this.objects.abortMultipartUpload(s3Key, uploadId).catch(() => undefined);
      throw error;
    }
    try {
      return await this.receive(record, range, request.body, true);
    } catch (error) {
      await this.discard(record).catch((cleanupError: unknown) => this.logger.warn({ contentId: id, err: cleanupError }, 'could not discard a failed new content'));
      throw error;
    }
  }

  /**
   * Stores one range of an unfinished content. The bytes go to S3 first (straight into their part,
   * or staged); then, under the content's lock, the bookkeeping is checked again and updated, and
   * any assembly or the completion this range makes possible is claimed; the claimed work runs
   * after the lock is released.
   */
  private async receive(record: ContentRecord, range: ContentRange, body: Readable, isNew: boolean): Promise<WriteOutcome> {
    const id = record._id;
    const wanted: ByteRange = { a: range.start, b: range.end };
    const touched = partsTouched(wanted);

    // The total decides whether a short range on a part boundary is the final part; it is looked up
    // only when the record does not have it. Everything is checked again under the lock.
    const known = record.total === null ? await this.ledger.state(id) : null;
    const total = this.settleTotal(record, known ?? emptyUploadState(id), range);
    const k = PartGrid.alignedPartNumber(wanted.a, wanted.b, total);
    // An S3 part write cannot be undone: before it, the part is claimed under the lock (checked
    // against what it holds), so that no other write or assembly of that part runs meanwhile.
    const writer = randomBytes(6).toString('hex');
    if (k !== null) {
      const claimed = await this.commits.commit(id, async (view) => {
        if (!isNew && isWithoutBookkeeping(view.state)) return false;
        const part = await view.part(k);
        this.checkWritable(view.state, [part], wanted);
        part.writing = { since: this.clock(), by: writer };
        return true;
      });
      if (!claimed) {
        // Completed (or removed) since this request read its record: answered as a write to it.
        const now = await this.contents.get(id);
        if (now?.state === 'ready') return this.rewriteReady(body, now, range);
        throw ServiceError.notFound('contentNotFound', `there is no content ${id}: its upload expired`);
      }
    }

    const length = wanted.b - wanted.a + 1;
    let piece: Piece;
    let etag: string | null = null;
    if (k !== null) {
      try {
        etag = await this.objects.uploadPart(record.s3Key, record.uploadId!, k, exactBody(body, length), length);
      } catch (error) {
        await this.releasePartWrite(id, k, writer);
        throw error;
      }
      piece = { ...wanted, kind: 'part', key: null, sha256: null };
    } else {
      const key = stagedKey(id, wanted.a, wanted.b, randomBytes(6).toString('hex'));
      const hashing = new HashingStream(length);
      await this.objects.putObject(key, pipeInto(exactBody(body, length), hashing), length, 'application/octet-stream');
      piece = { ...wanted, kind: 'staged', key, sha256: hashing.digest };
      this.metrics.piecesStaged.inc();
      this.metrics.stagedBytes.inc(length);
    }

    let work: Work;
    try {
      work = await this.commits.commit(id, async (view) => {
        const now = this.clock();
        const { state } = view;
        // An existing content always has bookkeeping until it is completed or removed; without it,
        // this request lost a race with its completion (or expiry) and must not bring it back.
        if (!isNew && isWithoutBookkeeping(state)) {
          return { assemblies: [], complete: false, total: null, gone: true };
        }
        const total = this.settleTotal(record, state, range);
        const parts = await Promise.all(touched.map((n) => view.part(n)));
        this.checkWritable(state, parts, wanted, writer);
        if (k !== null) {
          const part = parts[0]!;
          if (part.writing?.by !== writer) {
            // The claim ran out and another request may have written this part meanwhile.
            throw ServiceError.unavailable('partWriting', 'the part was written by another request meanwhile; send it again', undefined, 1);
          }
          part.writing = null;
        }
        // Under the lock, so that the sweeper (which decides under it too) sees the moved expiry.
        if ((await this.keepAlive(record)) <= now.getTime()) {
          throw ServiceError.notFound('contentNotFound', `there is no content ${id}: its upload expired`);
        }
        const earlier = parts[0]!.pieces.find((p) => p.a === wanted.a && p.b === wanted.b);
        if (earlier?.kind === 'staged' && piece.kind === 'staged' && parts.some((p) => state.parts[partKey(p.k)])) {
          // A retry of a piece already assembled into (one of) its parts: fine when the bytes are
          // the same ones; other bytes cannot replace them there (nor only in a neighbour part).
          if (earlier.sha256 !== piece.sha256) {
            throw ServiceError.conflict('rangeAlreadyStored', `bytes ${wanted.a}-${wanted.b} were already received with other content and are assembled into their part`);
          }
          // The retry may come after a completion that failed: it gets to claim the work again.
          return { ...(await this.claimWork(view, total, touched, now)), duplicate: true };
        }
        let replaced: Piece | undefined;
        for (const part of parts) {
          replaced = part.pieces.find((p) => p.a === wanted.a && p.b === wanted.b) ?? replaced;
          part.pieces = [...part.pieces.filter((p) => !(p.a === wanted.a && p.b === wanted.b)), piece].sort((x, y) => x.a - y.a);
          if (k !== null) part.stored = true;
        }
        if (k !== null) state.parts[partKey(k)] = { etag: etag!, size: length };
        const namesTotal = total !== null && record.total === null && state.total === null;
        if (record.total === null) state.total = total;
        if (advancesLastByte(state, total, wanted.b)) state.lastByte = wanted.b;
        // Naming the total may have made the final part complete, whoever sent its bytes.
        const candidates = new Set(touched);
        if (namesTotal) candidates.add(PartGrid.partCount(total));
        const work = await this.claimWork(view, total, [...candidates], now);
        return { ...work, replaced };
      });
    } catch (error) {
      if (piece.key) await this.objects.delete(piece.key).catch(() => undefined);
      if (k !== null) await this.releasePartWrite(id, k, writer);
      throw error;
    }
    if (work.gone) return this.afterCompletion(record, range, piece);
    if (k !== null) this.metrics.partsStored.inc({ via: 'direct' });
    if (work.duplicate && piece.key) await this.objects.delete(piece.key).catch(() => undefined);
    if (work.replaced?.key && work.replaced.key !== piece.key) await this.objects.delete(work.replaced.key).catch(() => undefined);
    const completedNow = await this.runWork(record, work);
    return { id, completedNow, completed: completedNow };
  }

  /**
   * A range that arrived while its content completed (or expired): once complete, it is a retry
   * when its bytes are the stored ones (answered like a write to a ready content), else 409; a
   * content gone is 404. Its staged copy is deleted either way.
   */
  private async afterCompletion(record: ContentRecord, range: ContentRange, piece: Piece): Promise<WriteOutcome> {
    try {
      const now = await this.contents.get(record._id);
      if (!now) throw ServiceError.notFound('contentNotFound', `there is no content ${record._id}: its upload expired`);
      if (now.state !== 'ready') throw ServiceError.unavailable('contentCompleting', 'the content is being completed right now; retry in a moment', undefined, 1);
      // An aligned part went into the S3 upload that the completion closed: nothing to compare it with.
      if (!piece.key) throw ServiceError.conflict('contentAlreadyComplete', 'the content was completed while these bytes were sent; send them again to have them compared');
      const stored = await this.objects.getRange(now.s3Key, range.start, range.end);
      const sent = await this.objects.getRange(piece.key, 0, range.end - range.start);
      if (!(await streamsEqual(sent.body, stored.body))) {
        throw ServiceError.conflict('contentAlreadyComplete', 'the content is complete and these bytes differ from the stored ones');
      }
      return { id: record._id, completedNow: false, completed: true };
    } finally {
      if (piece.key) await this.objects.delete(piece.key).catch(() => undefined);
    }
  }

  /** The total in force after this request, checked against what is known: 409 on a contradiction. */
  private settleTotal(record: ContentRecord, state: UploadState, range: ContentRange): number | null {
    const known = record.total ?? state.total;
    if (range.total !== null) {
      if (known !== null && known !== range.total) throw totalConflict(known, range.total);
      if (known === null && state.lastByte >= range.total) {
        throw ServiceError.conflict('totalConflict', `the total ${range.total} is smaller than the ${state.lastByte + 1} bytes already received`);
      }
    }
    const total = known ?? range.total;
    if (total !== null && range.end >= total) {
      throw ServiceError.badRequest('rangePastTotal', `Content-Range end ${range.end} is not below the content's total ${total}`);
    }
    return total;
  }

  /** Drops an aligned write's claim on its part when the write failed (best effort: the claim also runs out). */
  private async releasePartWrite(id: string, k: number, writer: string): Promise<void> {
    await this.commits
      .commit(id, async (view) => {
        const part = await view.part(k);
        if (part.writing?.by === writer) part.writing = null;
      })
      .catch((error: unknown) => this.logger.warn({ contentId: id, part: k, err: error }, 'could not release the claim of a failed part write; it runs out'));
  }

  /** Refuses writes that would clash with received bytes or with work in progress (other than `writer`'s own part write). */
  private checkWritable(state: UploadState, parts: PartRanges[], wanted: ByteRange, writer?: string): void {
    if (state.expiring) throw ServiceError.notFound('contentNotFound', `there is no content ${state._id}: its upload expired`);
    if (state.completing && !this.isStale(state.completing, this.options.completionLeaseMs)) {
      throw ServiceError.unavailable('contentCompleting', 'the content is being completed right now; retry in a moment', undefined, 1);
    }
    const verdict = classifyRange(wanted, parts.flatMap((p) => p.pieces));
    if (verdict === 'overlap') throw overlapConflict(wanted, parts.flatMap((p) => p.pieces));
    if (parts.some((p) => p.assembling && !this.isStale(p.assembling, this.options.assemblyLeaseMs))) {
      throw ServiceError.unavailable('partAssembling', 'the part these bytes belong to is being assembled right now; retry in a moment', undefined, 1);
    }
    if (parts.some((p) => this.isBeingWritten(p) && p.writing!.by !== writer)) {
      throw ServiceError.unavailable('partWriting', 'the part these bytes belong to is being written by another request right now; retry in a moment', undefined, 1);
    }
  }

  /** An aligned write into this S3 part is under way (a claim older than the assembly lease is presumed dead). */
  private isBeingWritten(part: PartRanges): boolean {
    return !!part.writing && !this.isStale(new Date(part.writing.since), this.options.assemblyLeaseMs);
  }

  /**
   * Under the content's lock: claims the assembly of every candidate part that is covered and not
   * yet stored, and the completion when every part is stored.
   */
  private async claimWork(view: LedgerView, total: number | null, candidates: number[], now: Date): Promise<Work> {
    const assemblies: Assembly[] = [];
    for (const k of candidates) {
      const part = await view.part(k);
      // The state's part list says what is stored (a part's own flag may lag after a half-written commit).
      if (view.state.parts[partKey(k)] || (part.assembling && !this.isStale(part.assembling, this.options.assemblyLeaseMs)) || this.isBeingWritten(part)) continue;
      const { start, end } = PartGrid.partRange(k, total);
      if (total !== null && start >= total) continue;
      if (!covers(part.pieces, { a: start, b: end }) || part.pieces.some((p) => p.kind !== 'staged')) continue;
      part.assembling = now;
      assemblies.push({ k, pieces: part.pieces });
    }
    const complete = assemblies.length === 0 && this.claimCompletion(view.state, total, now);
    return { assemblies, complete, total };
  }

  /** Sets `completing` when every part is stored and nobody else completes; true for the claimant. */
  private claimCompletion(state: UploadState, total: number | null, now: Date): boolean {
    if (total === null || total === 0) return false;
    if (state.completing && !this.isStale(state.completing, this.options.completionLeaseMs)) return false;
    const expected = PartGrid.partCount(total);
    for (let k = 1; k <= expected; k++) {
      const stored = state.parts[partKey(k)];
      const size = PartGrid.partRange(k, total).end - PartGrid.partRange(k, total).start + 1;
      if (!stored || stored.size !== size) return false;
    }
    state.completing = now;
    return true;
  }

  /** Runs the assemblies and completion claimed under the lock; true when this request completed the content. */
  private async runWork(record: ContentRecord, work: Work): Promise<boolean> {
    let complete = work.complete;
    for (const assembly of work.assemblies) {
      let result: { etag: string; size: number };
      const timer = this.metrics.assemblySeconds.startTimer();
      try {
        result = await this.assembler.assemble(record, assembly.k, work.total, assembly.pieces);
        timer();
        this.metrics.partsStored.inc({ via: 'assembled' });
      } catch (error) {
        await this.commits.commit(record._id, async (view) => {
          (await view.part(assembly.k)).assembling = null;
        });
        throw error;
      }
      complete = await this.commits.commit(record._id, async (view) => {
        const part = await view.part(assembly.k);
        part.stored = true;
        part.assembling = null;
        view.state.parts[partKey(assembly.k)] = result;
        return this.claimCompletion(view.state, record.total ?? view.state.total, this.clock());
      });
      await this.dropAssembledPieces(record._id, assembly.k, assembly.pieces);
    }
    if (!complete) return false;
    return this.complete(record, work.total ?? (await this.ledger.state(record._id)).total!);
  }

  /**
   * Deletes the staged objects of part k's pieces now that k is stored, except those that also hold
   * bytes of a neighbouring part not stored yet (that part's assembly still reads them).
   */
  private async dropAssembledPieces(id: string, k: number, pieces: Piece[]): Promise<void> {
    const neighbours = new Map<number, boolean>();
    const storedPart = async (n: number) => {
      if (n === k) return true;
      if (!neighbours.has(n)) neighbours.set(n, (await this.ledger.part(id, n)).stored);
      return neighbours.get(n)!;
    };
    const keys: string[] = [];
    for (const piece of pieces) {
      if (!piece.key) continue;
      let all = true;
      for (const n of partsTouched(piece)) all &&= await storedPart(n);
      if (all) keys.push(piece.key);
    }
    await this.objects.deleteMany(keys).catch(() => undefined);
  }

  /** A write to a finished content is a harmless retry when its bytes are the stored ones. */
  private async rewriteReady(body: Readable, record: ContentRecord, range: ContentRange): Promise<WriteOutcome> {
    const total = record.total!;
    if (range.total !== null && range.total !== total) throw totalConflict(total, range.total);
    if (range.end >= total) throw ServiceError.badRequest('rangePastTotal', `Content-Range end ${range.end} is not below the content's total ${total}`);
    const stored = await this.objects.getRange(record.s3Key, range.start, range.end);
    if (!(await streamsEqual(exactBody(body, range.end - range.start + 1), stored.body))) {
      throw ServiceError.conflict('contentAlreadyComplete', 'the content is complete and these bytes differ from the stored ones');
    }
    return { id: record._id, completedNow: false, completed: true };
  }

  /**
   * Called by the holder of the completion claim: CompleteMultipartUpload, then the record says
   * ready. True when the content is complete; false when S3 turned out to hold other bytes than
   * the bookkeeping says for some parts (written by a request that failed after its UploadPart,
   * or by two requests racing on one part): those parts are dropped, to be sent again.
   */
  private async complete(record: ContentRecord, total: number): Promise<boolean> {
    try {
      // Noted before S3 completes the object: if this process dies after it, the sweeper still
      // deletes the staged objects and bookkeeping (finishCleanup).
      await this.ledger.noteCleanup(record._id, total, this.clock());
      const state = await this.ledger.state(record._id);
      const expected = PartGrid.partCount(total);
      const parts = Array.from({ length: expected }, (_, i) => ({ partNumber: i + 1, ...state.parts[partKey(i + 1)]! }));
      const inDoubt = await this.partsInDoubt(record, parts);
      if (inDoubt.length > 0) {
        await this.commits.commit(record._id, async (view) => {
          for (const k of inDoubt) {
            delete view.state.parts[partKey(k)];
            Object.assign(await view.part(k), { pieces: [], stored: false, assembling: null });
          }
          view.state.completing = null;
        });
        this.logger.warn({ contentId: record._id, parts: inDoubt }, 'S3 holds other bytes than recorded for these parts; they are dropped and must be sent again');
        return false;
      }
      let etag: string;
      try {
        etag = await this.objects.completeMultipartUpload(record.s3Key, record.uploadId!, parts);
      } catch (error) {
        // An earlier holder may have completed the upload before it could record so.
        const existing = isNotFound(error) ? await this.objects.head(record.s3Key) : null;
        if (existing === null || existing.contentLength !== total) throw error;
        etag = existing.etag;
      }
      await this.contents.markReady(record._id, total, etag, this.clock());
      this.metrics.completed.inc();
    } catch (error) {
      await this.commits.commit(record._id, async (view) => {
        view.state.completing = null;
      });
      throw error;
    }
    await this.cleanUp(record._id, total).catch((error: unknown) => this.logger.warn({ contentId: record._id, err: error }, 'cleanup after completion failed; the sweeper will retry'));
    return true;
  }

  /** The parts whose ETag or size in S3 is not the recorded one (none when S3 has completed the upload already). */
  private async partsInDoubt(record: ContentRecord, parts: { partNumber: number; etag: string; size: number }[]): Promise<number[]> {
    let actual: Map<number, { etag: string; size: number }>;
    try {
      actual = await this.objects.listParts(record.s3Key, record.uploadId!);
    } catch (error) {
      if (isNotFound(error)) return [];
      throw error;
    }
    return parts.filter((p) => actual.get(p.partNumber)?.etag !== unquote(p.etag) || actual.get(p.partNumber)?.size !== p.size).map((p) => p.partNumber);
  }

  /**
   * For readers: finishes what a crashed or failed request left undone (a covered part never
   * assembled, a completion never finished), once its lease has run out.
   */
  async finishIfComplete(record: ContentRecord): Promise<ContentRecord> {
    if (record.state === 'ready') return record;
    const work = await this.commits.commit(record._id, async (view) => {
      const total = record.total ?? view.state.total;
      if (total === null || view.state.lastByte < 0) return null;
      // Only parts that are not stored yet can need an assembly; stored ones are in the state.
      const candidates = Array.from({ length: PartGrid.partCount(total) }, (_, i) => i + 1).filter((k) => !view.state.parts[partKey(k)]);
      return this.claimWork(view, total, candidates, this.clock());
    });
    if (work) await this.runWork(record, { ...work, replaced: undefined });
    return (await this.contents.find(record.ownerId, record._id)) ?? record;
  }

  /** The received byte ranges of an unfinished content, for HEAD. */
  async received(record: ContentRecord): Promise<{ total: number | null; ranges: ByteRange[] }> {
    const state = await this.ledger.state(record._id);
    const ranges: ByteRange[] = [];
    for (let k = 1; k <= PartGrid.partNumberAt(Math.max(0, state.lastByte)) && state.lastByte >= 0; k++) {
      const stored = state.parts[partKey(k)];
      if (stored) {
        // a stored part holds all of its bytes; only parts still being filled are read
        const start = PartGrid.partRange(k, null).start;
        ranges.push({ a: start, b: start + stored.size - 1 });
        continue;
      }
      const part = await this.ledger.part(record._id, k);
      ranges.push(...part.pieces.map(({ a, b }) => ({ a, b })));
    }
    return { total: record.total ?? state.total, ranges: mergeRanges(ranges) };
  }

  /**
   * An upload that is written to is not abandoned: a write moves its expiry to a full time to live
   * from now, but never past `MAX_LIFE_TTLS` times the time to live from its creation (the S3
   * lifecycle backstop aborts multipart uploads by age). At most once per `EXTEND_EVERY` of the
   * time to live, so that most writes leave the record alone. Returns the expiry in force.
   */
  private async keepAlive(record: ContentRecord): Promise<number> {
    const now = this.clock().getTime();
    const ttl = this.options.uploadTtlMs;
    const moved = Math.min(now + ttl, record.createdAt.getTime() + MAX_LIFE_TTLS * ttl);
    if (moved - record.expiresAt.getTime() < ttl * EXTEND_EVERY) return record.expiresAt.getTime();
    await this.contents.extend(record._id, new Date(moved));
    record.expiresAt = new Date(moved);
    return moved;
  }

  /**
   * For the sweeper: removes an upload whose time to live has run out, unless it has been written
   * to or completed since the sweeper read it. The decision is taken under the content's lock and
   * marked in its bookkeeping, so that no write after it is accepted and no completion runs.
   */
  async expire(id: string): Promise<boolean> {
    const claimed = await this.commits.commit(id, async (view) => {
      const current = await this.contents.get(id);
      if (!current || current.state !== 'uploading' || current.expiresAt.getTime() >= this.clock().getTime()) return null;
      const { completing } = view.state;
      if (completing && !this.isStale(completing, this.options.completionLeaseMs)) return null;
      view.state.expiring = this.clock();
      return { record: current, total: current.total ?? view.state.total, wasCompleting: completing !== null };
    });
    if (!claimed) return false;
    const { record, total } = claimed;
    // A completion whose CompleteMultipartUpload went through but whose request died before it
    // recorded so: the object is whole in S3; the content is made ready, not removed.
    const finished = claimed.wasCompleting && total !== null ? await this.objects.head(record.s3Key) : null;
    if (finished && finished.contentLength === total) {
      await this.contents.markReady(record._id, total, finished.etag, this.clock());
      await this.cleanUp(record._id, total);
      this.logger.warn({ contentId: record._id }, 'an expired upload was complete in S3: marked ready instead of removed');
      return false;
    }
    await this.discard(record);
    return true;
  }

  /**
   * Removes everything of an unfinished content: its S3 upload, record, staged pieces, and last
   * its bookkeeping (which, when the content expired, keeps refusing late writes until then).
   */
  async discard(record: ContentRecord): Promise<void> {
    if (record.uploadId) await this.objects.abortMultipartUpload(record.s3Key, record.uploadId);
    await this.contents.remove(record._id);
    await this.objects.deletePrefix(stagingPrefix(record._id));
    const state = await this.ledger.state(record._id);
    // Parts up to the last byte received, or all of them when the total is known (an aligned write
    // may have claimed a later part and failed).
    const total = record.total ?? state.total;
    await this.ledger.forget(record._id, Math.max(PartGrid.partNumberAt(Math.max(0, state.lastByte)), total ? PartGrid.partCount(total) : 0));
  }

  private async cleanUp(id: string, total: number): Promise<void> {
    await this.objects.deletePrefix(stagingPrefix(id));
    await this.ledger.forget(id, PartGrid.partCount(total));
    await this.ledger.cleanupDone(id);
  }

  /** For the sweeper: cleanups noted at completion that have not happened (their request failed or died). */
  async pendingCleanups(limit: number): Promise<PendingCleanup[]> {
    return this.ledger.pendingCleanups(limit);
  }

  /**
   * Deletes a completed content's staged objects and bookkeeping; false (nothing done) while the
   * content is still uploading (a completion that failed and may be tried again). A content that
   * is gone (swept) leaves nothing to delete but the note.
   */
  async finishCleanup(pending: PendingCleanup): Promise<boolean> {
    const record = await this.contents.get(pending._id);
    if (record && record.state !== 'ready') return false;
    await this.cleanUp(pending._id, pending.total);
    return true;
  }

  private isStale(since: Date, leaseMs: number): boolean {
    return since.getTime() < this.clock().getTime() - leaseMs;
  }

  private async requireRecord(ownerId: string, id: string): Promise<ContentRecord> {
    const record = await this.contents.find(ownerId, id);
    if (!record) throw ServiceError.notFound('contentNotFound', `there is no content ${id} of owner ${ownerId}`);
    return record;
  }

  private newRecord(id: string, ownerId: string, contentType: string, s3Key: string, uploadId: string | null, total: number | null, now: Date): ContentRecord {
    return {
      _id: id,
      ownerId,
      state: 'uploading',
      total,
      contentType,
      s3Key,
      uploadId,
      etag: null,
      createdAt: now,
      expiresAt: new Date(now.getTime() + this.options.uploadTtlMs),
      completedAt: null,
    };
  }
}

/** An upload's expiry is moved on by a write once this share of its time to live has passed. */
const EXTEND_EVERY = 0.01;
/** However busy, an upload expires this many times its time to live after its creation. */
export const MAX_LIFE_TTLS = 2;

export function contentKey(ownerId: string, id: string): string {
  return `contents/${ownerId}/${id}`;
}

function lockName(id: string): string {
  return `content:${id}`;
}

/**
 * Whether the state's last byte moves to `b`. While the total is unknown it is exact (it decides
 * whether a total named later contradicts received bytes); once the total is known it only bounds
 * which grid parts have bytes, so it moves only into a new part, and most pieces leave the state
 * document unwritten.
 */
function advancesLastByte(state: UploadState, total: number | null, b: number): boolean {
  if (b <= state.lastByte) return false;
  return total === null || state.lastByte < 0 || PartGrid.partNumberAt(b) > PartGrid.partNumberAt(state.lastByte);
}

/** An existing content has bookkeeping until it is completed or removed; a state without any means it is. */
function isWithoutBookkeeping(state: UploadState): boolean {
  return state.lastByte < 0 && state.total === null && Object.keys(state.parts).length === 0;
}

/** The grid parts a range has bytes in. */
function partsTouched(r: ByteRange): number[] {
  const out: number[] = [];
  for (let k = PartGrid.partNumberAt(r.a); k <= PartGrid.partNumberAt(r.b); k++) out.push(k);
  return out;
}

function totalConflict(stored: number, given: number): ServiceError {
  return ServiceError.conflict('totalConflict', `the content's total is ${stored}, not ${given}`);
}

function overlapConflict(wanted: ByteRange, received: readonly ByteRange[]): ServiceError {
  const clash = received.find((r) => !(r.b < wanted.a || r.a > wanted.b) && !(r.a === wanted.a && r.b === wanted.b));
  return ServiceError.conflict(
    'rangeOverlap',
    `bytes ${wanted.a}-${wanted.b} partly overlap bytes ${clash ? `${clash.a}-${clash.b}` : ''} already received; resend exactly the same range or only missing bytes`,
  );
}
