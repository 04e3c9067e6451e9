// From parts to a ready content: assembly of each part, the ListParts check and
// CompleteMultipartUpload (UploadCompletion), assemblies left to the background
// (BackgroundAssemblies), and the status a HEAD answers (UploadStatus).
import { setTimeout as sleep } from 'node:timers/promises';
import { randomBytes } from 'node:crypto';
import { ServiceError } from '@cp/errors';
import { type Piece, StaleBookRead, type UploadRecord } from '../store/UploadBook';
import { type ByteRange, mergeRanges, PartGrid, partKey } from './PartGrid';
import { type UploadContext } from './UploadContext';
import {
  claimCompletion,
  ClaimHeartbeat,
  type ClaimKind,
  claimLost,
  claimRemainingWork,
  countTakeovers,
  type Work,
} from './BookCommits';
import { isNoSuchUpload, isNotFound, unquote } from '../store/ObjectStore';
import { type PartAssembler } from './PartAssembler';
import { StageTimings } from './UploadMetrics';
import { checkUploadInForce, type LostUploads, releaseInDoubt, type UploadCleanup } from './UploadCleanup';
import { partsTouched } from './WriteAdmission';

/**
 * Assemblies of parts that do not finish their content run after their request has answered, so
 * that a client sending small chunks one at a time does not wait for a 64 MiB UploadPart every 64
 * chunks. Their claims are leases like any other (renewed while they run, dead within a lease of
 * this process), so a crash leaves nothing that a later request cannot take over. At most `limit`
 * run at once in a process; past that, a request runs its assembly itself (back-pressure).
 */
export class BackgroundAssemblies {
  private readonly running = new Map<string, Set<{ task: Promise<void>; parts: number[] }>>();
  private count = 0;

  constructor(
    private readonly limit: number,
    private readonly onError: (contentId: string, error: unknown) => void,
  ) {}

  /** Starts `work`, the assembly of `parts` of a content; false when `limit` already run (the caller then runs it itself). */
  start(contentId: string, parts: number[], work: () => Promise<unknown>): boolean {
    if (this.count >= this.limit) return false;
    this.count += 1;
    const set = this.running.get(contentId) ?? new Set();
    this.running.set(contentId, set);
    const entry = {
      parts,
      task: work()
        .then(
          () => undefined,
          (error: unknown) => this.onError(contentId, error),
        )
        .finally(() => {
          this.count -= 1;
          set.delete(entry);
          if (set.size === 0 && this.running.get(contentId) === set) this.running.delete(contentId);
        }),
    };
    set.add(entry);
    return true;
  }

  /**
   * Resolves once the content's assemblies running in this process (those of `parts` only, when
   * given) have ended, or after `ms`: a write to a part being assembled here waits for it rather
   * than getting 503, as it would have had its request assembled it.
   */
  async settled(contentId: string, ms: number, parts?: number[]): Promise<void> {
    const tasks = [...(this.running.get(contentId) ?? [])]
      .filter((e) => !parts || e.parts.some((k) => parts.includes(k)))
      .map((e) => e.task);
    await settle(tasks, ms);
  }

  /** For shutdown: resolves once every running assembly has ended, or after `ms`. */
  async drain(ms: number): Promise<void> {
    await settle(
      [...this.running.values()].flatMap((set) => [...set].map((e) => e.task)),
      ms,
    );
  }

  get size(): number {
    return this.count;
  }
}

async function settle(tasks: Promise<void>[], ms: number): Promise<void> {
  if (tasks.length === 0) return;
  const timeout = new AbortController();
  await Promise.race([
    Promise.allSettled(tasks),
    sleep(ms, undefined, { signal: timeout.signal }).catch(() => undefined),
  ]);
  timeout.abort();
}

/** What downloads need of the uploads, on their miss path (no object yet): the upload, what it received, and a repair. */
export interface UploadStatusReader {
  /** The owner's unfinished upload of that id; null when there is none. */
  find(ownerId: string, id: string): Promise<UploadRecord | null>;
  received(record: UploadRecord): Promise<{ total: number | null; ranges: ByteRange[] }>;
  /** True when the content is complete now. */
  finishIfComplete(record: UploadRecord): Promise<boolean>;
}

/** An unfinished upload as readers see it: the bytes received, and a completion left undone finished. */
export class UploadStatus implements UploadStatusReader {
  constructor(
    private readonly ctx: UploadContext,
    private readonly completion: UploadCompletion,
  ) {}

  async find(ownerId: string, id: string): Promise<UploadRecord | null> {
    const record = await this.ctx.book.find(id);
    return record?.ownerId === ownerId ? record : null;
  }

  /** The received byte ranges of an unfinished content, for HEAD (read again when a write moved it on meanwhile). */
  async received(record: UploadRecord): Promise<{ total: number | null; ranges: ByteRange[] }> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.readReceived(record);
      } catch (error) {
        if (!(error instanceof StaleBookRead) || attempt === 5) throw error;
      }
    }
  }

  private async readReceived(record: UploadRecord): Promise<{ total: number | null; ranges: ByteRange[] }> {
    const { book } = this.ctx;
    const state = await book.state(record._id);
    const ranges: ByteRange[] = [];
    for (let k = 1; k <= PartGrid.partNumberAt(Math.max(0, state.lastByte)) && state.lastByte >= 0; k++) {
      const stored = state.parts[partKey(k)];
      if (stored) {
        // a stored part holds all of its bytes; only parts still being filled are read
        const start = PartGrid.partRange(k, null).start;
        ranges.push({ a: start, b: start + stored.size - 1 });
        continue;
      }
      const part = await book.part(record._id, k, state.version);
      ranges.push(...part.pieces.map(({ a, b }) => ({ a, b })));
    }
    return { total: record.total ?? state.total, ranges: mergeRanges(ranges) };
  }

  /**
   * For readers: finishes what a crashed or failed request left undone (a covered part never
   * assembled, a completion never finished), once its lease has run out.
   */
  async finishIfComplete(record: UploadRecord): Promise<boolean> {
    const { commits, clock, leases } = this.ctx;
    const holder = randomBytes(6).toString('hex');
    const work = await commits.commit(record._id, (view) =>
      claimRemainingWork(view, record.total, clock(), leases, holder),
    );
    if (!work) return false;
    countTakeovers(this.ctx.metrics, work.takenOver);
    try {
      return await this.completion.run(record, { ...work, replaced: undefined }, holder);
    } catch (error) {
      // S3 lost the upload (LostUploads): to a reader, the content is still unfinished.
      if (error instanceof ServiceError && ['uploadRestarted', 'contentCompleting'].includes(error.code)) return false;
      throw error;
    }
  }
}

/** S3 does not hold the upload any more, nor shows its object: see LostUploads. */
class UploadLost extends Error {
  override readonly name = 'UploadLost';
  readonly code = 'CP_ERR_UPLOAD_LOST';
}

/**
 * Runs what a request claimed in the bookkeeping: the assembly of covered parts from their
 * staged pieces, then, for the one holder of the completion claim, CompleteMultipartUpload after
 * checking with ListParts that S3 holds the recorded parts.
 */
export class UploadCompletion {
  constructor(
    private readonly ctx: UploadContext,
    private readonly assembler: PartAssembler,
    private readonly cleanup: UploadCleanup,
    private readonly background: BackgroundAssemblies,
    private readonly lost: LostUploads,
  ) {}

  /**
   * What a request does with the work it claimed. The request that received the content's last
   * bytes sees it completed (its 201): it runs its assemblies, waits for those still running, and
   * completes. Any other request answers at once and leaves its assemblies running after it.
   */
  async finish(record: UploadRecord, work: Work, holder: string, timings: StageTimings): Promise<boolean> {
    if (work.assemblies.length > 0 && !work.allReceived && !work.complete) {
      const later = () => this.run(record, work, holder, undefined, false);
      if (
        this.background.start(
          record._id,
          work.assemblies.map((a) => a.k),
          later,
        )
      )
        return false;
    }
    if (work.complete || work.assemblies.length > 0) {
      const done = await this.run(record, work, holder, timings);
      if (done || !work.allReceived) return done;
    }
    return work.allReceived ? this.awaitAndComplete(record, holder, timings) : false;
  }

  /** Waits (boundedly) for this process's assemblies of the given parts of a content, before a write to them. */
  async settleAssemblies(contentId: string, parts: number[]): Promise<void> {
    await this.background.settled(contentId, 2 * this.ctx.leases.assemblyLeaseMs, parts);
  }

  /**
   * For the request that received a content's last bytes while parts of it were still being
   * assembled (after other requests, here or in another replica): waits for them, takes over any
   * whose holder died or gave up, and completes. Bounded: after two assembly leases, 503
   * partAssembling (a retry of the same range completes it).
   */
  private async awaitAndComplete(record: UploadRecord, holder: string, timings: StageTimings): Promise<boolean> {
    const { commits, clock, leases } = this.ctx;
    const deadline = Date.now() + 2 * leases.assemblyLeaseMs;
    for (let pause = 10; ; pause = Math.min(2 * pause, 250)) {
      await timings.time('assembly', () => this.background.settled(record._id, Math.max(0, deadline - Date.now())));
      const work = await commits.commit(record._id, (view) =>
        claimRemainingWork(view, record.total, clock(), leases, holder),
      );
      if (work) countTakeovers(this.ctx.metrics, work.takenOver);
      // Gone (completed by another request meanwhile), or being completed by another request.
      if (!work || (!work.complete && work.assemblies.length === 0 && !work.allReceived)) return false;
      if (work.complete || work.assemblies.length > 0) {
        if (await this.run(record, work, holder, timings)) return true;
      } else if ((await this.ctx.book.state(record._id)).completing) {
        return false;
      }
      if (Date.now() > deadline)
        throw ServiceError.of(
          'partAssembling',
          'parts of this content are still being assembled; send the same range again',
        );
      await timings.time('assembly', () => sleep(pause));
    }
  }

  /**
   * Runs the assemblies and completion claimed in the bookkeeping by `holder` (the request's fencing
   * token); true when this request completed the content. Each claim is renewed while its work
   * runs; a claim lost meanwhile aborts the work, and its result is not recorded.
   */
  async run(
    record: UploadRecord,
    work: Work,
    holder: string,
    timings = new StageTimings(),
    mayComplete = true,
  ): Promise<boolean> {
    const { commits, metrics, clock, leases, book } = this.ctx;
    let complete = work.complete;
    for (const assembly of work.assemblies) {
      const { k } = assembly;
      const mine = (part: { assembling: Date | null; assemblingBy?: string | null }) =>
        part.assembling !== null && part.assemblingBy === holder;
      const heartbeat = new ClaimHeartbeat(
        `the assembly of part ${k}`,
        () =>
          commits.commit(record._id, async (view) => {
            const part = await view.part(k);
            if (!mine(part)) return false;
            part.assembling = clock();
            return true;
          }),
        leases.assemblyLeaseMs,
      );
      let result: { etag: string; size: number };
      const timer = metrics.assemblySeconds.startTimer();
      try {
        result = await timings.time('assembly', () =>
          this.assembler.assemble(record, k, work.total, assembly.pieces, heartbeat.signal),
        );
        timer();
        heartbeat.check();
        metrics.partsStored.inc({ via: 'assembled' });
        const recorded = await commits.commit(record._id, async (view) => {
          const part = await view.part(k);
          // Fenced: only the holder of the assembly claim records its result, into the upload in force.
          if (!mine(part)) throw claimLost(`the assembly of part ${k}`);
          checkUploadInForce(view.state, record);
          part.stored = true;
          part.assembling = null;
          part.assemblingBy = null;
          view.state.parts[partKey(k)] = result;
          // An assembly running after its request answered never completes: the request that
          // received the last bytes does, so that it is the one that answers 201.
          const takenOver: ClaimKind[] = [];
          const total = record.total ?? view.state.total;
          return {
            complete: mayComplete && claimCompletion(view.state, total, clock(), leases, holder, takenOver),
            takenOver,
          };
        });
        countTakeovers(metrics, recorded.takenOver);
        complete = recorded.complete;
      } catch (error) {
        await heartbeat.stop();
        await commits
          .commit(record._id, async (view) => {
            const part = await view.part(k);
            if (mine(part)) Object.assign(part, { assembling: null, assemblingBy: null });
          })
          .catch(() => releaseInDoubt(this.ctx, record._id, holder, [k]));
        if (isNoSuchUpload(error) && !heartbeat.signal.aborted) await this.lost.recover(record, 'no such upload');
        throw error;
      }
      await heartbeat.stop();
      await this.dropAssembledPieces(record._id, k, assembly.pieces);
    }
    if (!complete) return false;
    return timings.time('complete', async () =>
      this.complete(record, work.total ?? (await book.state(record._id)).total!, holder),
    );
  }

  /**
   * Deletes the staged objects of part k's pieces now that k is stored, except those that also hold
   * bytes of a neighbouring part not stored yet (that part's assembly still reads them).
   */
  private async dropAssembledPieces(id: string, k: number, pieces: Piece[]): Promise<void> {
    const neighbours = new Map<number, boolean>();
    const storedPart = async (n: number) => {
      if (n === k) return true;
      if (!neighbours.has(n)) neighbours.set(n, (await this.ctx.book.part(id, n)).stored);
      return neighbours.get(n)!;
    };
    const keys: string[] = [];
    for (const piece of pieces) {
      if (!piece.key) continue;
      let all = true;
      for (const n of partsTouched(piece)) all &&= await storedPart(n);
      if (all) keys.push(piece.key);
    }
    await this.ctx.objects.deleteMany(keys).catch(() => undefined);
  }

  /**
   * Called by the holder of the completion claim: CompleteMultipartUpload, then HeadObject (the
   * content is complete once S3 shows its object), then the record says ready. True when the
   * content is complete; false when S3 turned out to hold other bytes than the bookkeeping says
   * for some parts (written by a request that failed after its UploadPart, or by two requests
   * racing on one part): those parts are dropped, to be sent again. S3 answering "completed"
   * without an object is a lost upload (LostUploads: 503, then 409 uploadRestarted).
   */
  private async complete(record: UploadRecord, total: number, holder: string): Promise<boolean> {
    const { book, commits, objects, metrics, clock, logger, leases, events } = this.ctx;
    let intent: unknown;
    const mine = (state: { completing: Date | null; completingBy?: string | null }) =>
      state.completing !== null && state.completingBy === holder;
    const heartbeat = new ClaimHeartbeat(
      'the completion',
      () =>
        commits.commit(record._id, async (view) => {
          if (!mine(view.state)) return false;
          view.state.completing = clock();
          return true;
        }),
      leases.completionLeaseMs,
    );
    try {
      // Noted before S3 completes the object: if this process dies after it, the sweeper still
      // deletes the staged objects and bookkeeping (finishCleanup), and its event is published
      // when the dispatcher checks the fact.
      await book.noteCleanup(record._id, clock());
      const completed = { id: record._id, size: total, 'content-type': record.contentType };
      intent = await events.intend('content.completed', record.ownerId, completed);
      const state = await book.state(record._id);
      const expected = PartGrid.partCount(total);
      const parts = Array.from({ length: expected }, (_, i) => ({
        partNumber: i + 1,
        ...state.parts[partKey(i + 1)]!,
      }));
      const inDoubt = await this.partsInDoubt(record, parts, heartbeat.signal);
      if (inDoubt.length > 0) {
        await commits.commit(record._id, async (view) => {
          if (!mine(view.state)) throw claimLost('the completion');
          for (const k of inDoubt) {
            delete view.state.parts[partKey(k)];
            delete view.state.covered?.[partKey(k)];
            Object.assign(await view.part(k), { pieces: [], stored: false, assembling: null });
          }
          view.state.completing = null;
          view.state.completingBy = null;
        });
        await heartbeat.stop();
        logger.warn(
          { contentId: record._id, parts: inDoubt },
          'S3 holds other bytes than recorded for these parts; they are dropped and must be sent again',
        );
        return false;
      }
      let answer: unknown = null;
      try {
        heartbeat.check();
        await objects.completeMultipartUpload(record.s3Key, record.uploadId, parts, heartbeat.signal);
      } catch (error) {
        heartbeat.check();
        // An earlier holder may have completed the upload before it could clean up.
        if (!isNotFound(error)) throw error;
        answer = error;
      }
      // S3's "completed" is not proof: the content is complete once S3 shows its object, whole.
      const shown = await objects.head(record.s3Key);
      if (shown === null) throw new UploadLost(answer === null ? 'completed without an object' : 'no such upload');
      if (shown.contentLength !== total)
        throw new Error(
          `S3 shows ${shown.contentLength} bytes for content ${record._id} of ${total} after its completion`,
        );
      // Fenced: of a holder and the successor that took its claim over, only the one that still
      // holds the claim answers that it completed the content (the object is the same).
      await commits.commit(record._id, async (view) => {
        if (!mine(view.state)) throw claimLost('the completion');
      });
      metrics.completed.inc();
      await this.ctx.quotas.completed(record.ownerId, record._id, record.total ?? state.held ?? 0, total);
    } catch (error) {
      await heartbeat.stop();
      await commits
        .commit(record._id, async (view) => {
          if (mine(view.state)) Object.assign(view.state, { completing: null, completingBy: null });
        })
        .catch(() => releaseInDoubt(this.ctx, record._id, holder, []));
      if (error instanceof UploadLost) await this.lost.recover(record, error.message);
      throw error;
    }
    await heartbeat.stop();
    await events.publish(intent);
    await this.cleanup
      .afterCompletion(record._id)
      .catch((error: unknown) =>
        logger.warn({ contentId: record._id, err: error }, 'cleanup after completion failed; the sweeper will retry'),
      );
    return true;
  }

  /** The parts whose ETag or size in S3 is not the recorded one (none when S3 has completed the upload already). */
  private async partsInDoubt(
    record: UploadRecord,
    parts: { partNumber: number; etag: string; size: number }[],
    signal: AbortSignal,
  ): Promise<number[]> {
    let actual: Map<number, { etag: string; size: number }>;
    try {
      actual = await this.ctx.objects.listParts(record.s3Key, record.uploadId, signal);
    } catch (error) {
      if (isNotFound(error)) return [];
      throw error;
    }
    return parts
      .filter((p) => actual.get(p.partNumber)?.etag !== unquote(p.etag) || actual.get(p.partNumber)?.size !== p.size)
      .map((p) => p.partNumber);
  }
}
