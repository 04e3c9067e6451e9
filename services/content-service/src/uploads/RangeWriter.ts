import { hasErrorCode, ServiceError } from '@cp/errors';
import {
  type BodyChecksum,
  isNoSuchUpload,
  isNotFound,
  isS3Unavailable,
  type ObjectStore,
  unquote,
} from '../store/ObjectStore';
import { emptyUploadState, type Piece, type UploadRecord, type UploadState } from '../store/UploadBook';
import { type UploadContext, type WriteOutcome } from './UploadContext';
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { inSpan } from '@cp/tracing';
import { type ContentRange } from '@cp/protocol';
import {
  checkUploadInForce,
  type LostUploads,
  releaseInDoubt,
  releasePartWrite,
  renewPartWrite,
} from './UploadCleanup';
import { type Hold } from '../quotas/OwnerQuotas';
import { type ByteRange, PartGrid, partKey, stagedKey } from './PartGrid';
import { ClaimHeartbeat, type ClaimKind, claimWork, countTakeovers, type Work } from './BookCommits';
import { exactBody } from './ExactLengthStream';
import { type StageTimings } from './UploadMetrics';
import { type ReadyContentRewrites } from './ReadyContentRewrites';
import { type UploadCompletion } from './UploadCompletion';
import {
  advancesLastByte,
  checkWritable,
  expired,
  extendedExpiry,
  isWithoutBookkeeping,
  partsTouched,
  settleTotal,
  totalConflict,
} from './WriteAdmission';

/** Bytes a client put into S3 part k itself, with a presigned URL: S3's ETag for them. */
export interface PartInS3 {
  etag: string;
}

/** 409 directPartMissing unless S3 holds part k of the upload with that ETag and exactly `length` bytes. */
export async function checkPartInS3(
  objects: ObjectStore,
  record: UploadRecord,
  k: number,
  length: number,
  etag: string,
  signal?: AbortSignal,
): Promise<void> {
  const held = (await objects.listParts(record.s3Key, record.uploadId, signal)).get(k);
  if (!held || held.etag !== unquote(etag) || held.size !== length)
    throw ServiceError.of(
      'directPartMissing',
      held
        ? `S3 holds part ${k} with ${held.size} bytes and another ETag than ${JSON.stringify(etag)}, not the ${length} bytes sent: send it again`
        : `S3 holds no part ${k} of this upload: send it to its URL (again)`,
    );
}

/**
 * Stores one range of an unfinished content: a range that is exactly a grid part streams straight
 * into UploadPart (claimed first, as that cannot be undone); any other range is staged as its own
 * S3 object. Then, in one compare-and-set commit, the bookkeeping is checked again and updated, and
 * any assembly or the completion this range makes possible is claimed and run.
 */
export class RangeWriter {
  constructor(
    private readonly ctx: UploadContext,
    private readonly rewrites: ReadyContentRewrites,
    private readonly completion: UploadCompletion,
    private readonly lost: LostUploads,
  ) {}

  async write(
    record: UploadRecord,
    range: ContentRange,
    body: Readable | PartInS3,
    isNew: boolean,
    timings: StageTimings,
    digests: BodyChecksum = {},
  ): Promise<WriteOutcome> {
    // A part assembled in this process after its request answered: a write to it waits for that.
    await this.completion.settleAssemblies(record._id, partsTouched({ a: range.start, b: range.end }));
    // The total decides whether a short range on a part boundary is the final part; it is looked up
    // only when the record does not have it. Everything is checked again in the commit.
    const known = record.total === null ? await timings.time('commit', () => this.ctx.book.state(record._id)) : null;
    if (known?.total !== null || range.total === null)
      return this.writeRange(record, range, body, isNew, timings, digests, known, null);
    // The write that names the total of an upload created without one holds it against the owner's
    // quota before its bytes are stored; the hold stays with the upload only if it is the one that names it.
    const naming = { hold: await this.ctx.quotas.admit(record.ownerId, range.total, false), named: false };
    return this.writeRange(record, range, body, isNew, timings, digests, known, naming).finally(
      () => naming.named || naming.hold.release(),
    );
  }

  private async writeRange(
    record: UploadRecord,
    range: ContentRange,
    body: Readable | PartInS3,
    isNew: boolean,
    timings: StageTimings,
    digests: BodyChecksum,
    known: UploadState | null,
    naming: Naming | null,
  ): Promise<WriteOutcome> {
    const { sha256 = null, crc64nvme = null } = digests;
    const { commits, clock, leases, objects } = this.ctx;
    const id = record._id;
    const wanted: ByteRange = { a: range.start, b: range.end };
    const total = settleTotal(record, known ?? emptyUploadState(id), range);
    const k = PartGrid.alignedPartNumber(wanted.a, wanted.b, total);
    // An S3 part write cannot be undone: before it, the part is claimed in a commit (checked
    // against what it holds), so that no other write or assembly of that part runs meanwhile.
    const writer = randomBytes(6).toString('hex');
    if (k !== null) {
      const claimed = await inSpan('upload admission', { 'cp.upload.part': k }, () =>
        commits.commit(
          id,
          async (view) => {
            if (!isNew && isWithoutBookkeeping(view.state)) return null;
            checkUploadInForce(view.state, record);
            const part = await view.part(k);
            checkWritable(view.state, [part], wanted, leases, clock());
            // A write claim still on the part is past its lease (checkWritable refuses a live one).
            const takenOver: ClaimKind[] = part.writing ? ['write'] : [];
            part.writing = { since: clock(), by: writer };
            return takenOver;
          },
          timings,
        ),
      ).catch((error: unknown) => {
        if (outcomeInDoubt(error)) releaseInDoubt(this.ctx, id, writer, [k]);
        throw error;
      });
      if (!claimed) {
        // Completed (or removed) since this request read its record: answered as a write to it.
        const ready = await objects.head(record.s3Key);
        if (ready && !(body instanceof Readable))
          throw ServiceError.of('contentAlreadyComplete', 'the content is complete: it takes no more parts');
        if (ready && body instanceof Readable)
          return this.rewrites.rewrite(body, { id, s3Key: record.s3Key, total: ready.contentLength }, range, sha256);
        throw expired(id);
      }
      countTakeovers(this.ctx.metrics, claimed);
    }

    // The part-write claim is renewed while the bytes stream and until they are recorded: it
    // outlives a slow transfer, and dies within one lease of this process.
    const heartbeat =
      k !== null
        ? new ClaimHeartbeat(`part ${k}`, () => renewPartWrite(this.ctx, id, k, writer), leases.assemblyLeaseMs)
        : null;
    let work: Work;
    let stored: { piece: Piece; etag: string | null } | null = null;
    try {
      stored = await timings.time(k !== null ? 'part' : 'stage', () =>
        this.store(record, wanted, k, body, { sha256, crc64nvme }, heartbeat?.signal),
      );
      heartbeat?.check();
      work = await inSpan('upload commit', undefined, () =>
        this.record(record, range, stored!, k, writer, isNew, timings, naming),
      );
      countTakeovers(this.ctx.metrics, work.takenOver);
    } catch (error) {
      await heartbeat?.stop();
      // A staged piece stays when its record commit may yet be applied (it would name the piece);
      // the staging prefix goes at completion or expiry anyway.
      if (stored?.piece.key && !outcomeInDoubt(error))
        await this.ctx.objects.delete(stored.piece.key).catch(() => undefined);
      if (k !== null) await releasePartWrite(this.ctx, id, k, writer);
      // The record commit may yet be applied by a Redis that did not answer it: with its claims.
      if (outcomeInDoubt(error)) releaseInDoubt(this.ctx, id, writer, claimable(wanted, total));
      if (k !== null && failedByRemoval(error) && (await this.removedUnder(record))) throw expired(id);
      // S3 no longer holds the upload the part went to (completed, or lost in the middle of a
      // completion). S3 may refuse such a part before reading its body and close the connection,
      // which reads as a broken connection: ListParts tells.
      if (isNoSuchUpload(error) || (k !== null && cutOff(error) && (await this.uploadGone(record))))
        await this.lost.recover(record, 'no such upload');
      throw error;
    }
    await heartbeat?.stop();
    if (work.gone) return this.rewrites.afterCompletion(record, range, stored.piece);
    if (k !== null) this.ctx.metrics.partsStored.inc({ via: body instanceof Readable ? 'direct' : 'presigned' });
    const { piece } = stored;
    if (work.duplicate && piece.key) await this.ctx.objects.delete(piece.key).catch(() => undefined);
    if (work.replaced?.key && work.replaced.key !== piece.key)
      await this.ctx.objects.delete(work.replaced.key).catch(() => undefined);
    const completedNow = await this.completion.finish(record, work, writer, timings).catch(async (error: unknown) => {
      throw failedByRemoval(error) && (await this.removedUnder(record)) ? expired(id) : error;
    });
    // Every byte in, yet not completed: the upload was removed meanwhile (its last write is refused).
    if (!completedNow && work.allReceived && (await this.removedUnder(record))) throw expired(id);
    return { id, completedNow, completed: completedNow };
  }

  /**
   * The bytes into S3: straight into part k (claimed; `signal` aborts when the claim is lost), or
   * staged as a piece of their own. A client's digest goes with them; the service hashes the bytes
   * only where S3 does not check it, or for a staged piece sent without one (its SHA-256 tells a
   * retry of the same bytes). A part the client put into S3 itself is checked there (ListParts).
   */
  private async store(
    record: UploadRecord,
    wanted: ByteRange,
    k: number | null,
    body: Readable | PartInS3,
    digests: BodyChecksum,
    signal: AbortSignal | undefined,
  ): Promise<{ piece: Piece; etag: string | null }> {
    const { objects, metrics } = this.ctx;
    const length = wanted.b - wanted.a + 1;
    const sha256 = objects.checksumsChecked ? null : (digests.sha256 ?? null);
    if (!(body instanceof Readable)) {
      await checkPartInS3(objects, record, k!, length, body.etag, signal);
      return { piece: { ...wanted, kind: 'part', key: null, sha256: null }, etag: body.etag };
    }
    if (k !== null) {
      const exact = exactBody(body, length, { sha256 });
      const etag = await objects.uploadPart(record.s3Key, record.uploadId, k, exact, length, signal, digests);
      return { piece: { ...wanted, kind: 'part', key: null, sha256: null }, etag };
    }
    const key = stagedKey(record._id, wanted.a, wanted.b, randomBytes(6).toString('hex'));
    const named = objects.checksumsChecked ? digests.sha256?.toString('hex') : undefined;
    const hashed = exactBody(body, length, { hash: !named, sha256 });
    await objects.putObject(key, hashed, length, 'application/octet-stream', { digests });
    metrics.piecesStaged.inc();
    metrics.stagedBytes.inc(length);
    return { piece: { ...wanted, kind: 'staged', key, sha256: named ?? hashed.digest }, etag: null };
  }

  /** In one commit: the stored bytes enter the bookkeeping, and the work they make possible is claimed. */
  private record(
    record: UploadRecord,
    range: ContentRange,
    stored: { piece: Piece; etag: string | null },
    k: number | null,
    writer: string,
    isNew: boolean,
    timings: StageTimings,
    naming: Naming | null,
  ): Promise<Work> {
    const { commits, clock, leases } = this.ctx;
    const { piece, etag } = stored;
    const wanted: ByteRange = { a: piece.a, b: piece.b };
    const touched = partsTouched(wanted);
    return commits.commit(
      record._id,
      async (view) => {
        const now = clock();
        const { state } = view;
        // An existing content always has bookkeeping until it is completed or removed; without it,
        // this request lost a race with its completion (or expiry) and must not bring it back.
        if (!isNew && isWithoutBookkeeping(state)) {
          return { assemblies: [], complete: false, total: null, gone: true };
        }
        checkUploadInForce(state, record);
        const total = settleTotal(record, state, range);
        const parts = await Promise.all(touched.map((n) => view.part(n)));
        checkWritable(state, parts, wanted, leases, clock(), writer);
        if (k !== null) {
          const part = parts[0]!;
          if (part.writing?.by !== writer) {
            // The claim ran out and another request may have written this part meanwhile.
            throw ServiceError.of('partWriting', 'the part was written by another request meanwhile; send it again');
          }
          part.writing = null;
        }
        // In the commit, so that the sweeper (whose expiry decision is a commit too) sees the moved expiry.
        if ((await this.keepAlive(record)) <= now.getTime()) throw expired(record._id);
        const earlier = parts[0]!.pieces.find((p) => p.a === wanted.a && p.b === wanted.b);
        if (earlier?.kind === 'staged' && piece.kind === 'staged' && parts.some((p) => state.parts[partKey(p.k)])) {
          // A retry of a piece already assembled into (one of) its parts: fine when the bytes are
          // the same ones; other bytes cannot replace them there (nor only in a neighbour part).
          if (earlier.sha256 !== piece.sha256) {
            throw ServiceError.of(
              'rangeAlreadyStored',
              `bytes ${wanted.a}-${wanted.b} were already received with other content and are assembled into their part`,
            );
          }
          // The retry may come after a completion that failed: it gets to claim the work again.
          return { ...(await claimWork(view, total, touched, now, leases, writer)), duplicate: true };
        }
        let replaced: Piece | undefined;
        for (const part of parts) {
          replaced = part.pieces.find((p) => p.a === wanted.a && p.b === wanted.b) ?? replaced;
          part.pieces = [...part.pieces.filter((p) => !(p.a === wanted.a && p.b === wanted.b)), piece].sort(
            (x, y) => x.a - y.a,
          );
          if (k !== null) part.stored = true;
        }
        if (k !== null) state.parts[partKey(k)] = { etag: etag!, size: wanted.b - wanted.a + 1 };
        const namesTotal = total !== null && record.total === null && state.total === null;
        if (naming) naming.named = namesTotal;
        if (namesTotal && naming?.hold.bytes != null) state.held = total;
        if (record.total === null) state.total = total;
        if (advancesLastByte(state, total, wanted.b)) state.lastByte = wanted.b;
        // Naming the total may have made the final part complete, whoever sent its bytes.
        const candidates = new Set(touched);
        if (namesTotal) candidates.add(PartGrid.partCount(total));
        const work = await claimWork(view, total, [...candidates], now, leases, writer);
        return { ...work, replaced };
      },
      timings,
    );
  }

  /**
   * Names the total of an upload created without one, with no bytes: the end of an upload whose
   * length its client learnt only after sending the last byte. Checked against what was received
   * (409 when bytes lie past it, or another total was named), held against the owner's quota as a
   * write naming it is, and the completion it makes possible (every byte there) is run.
   */
  async nameTotal(record: UploadRecord, total: number, timings: StageTimings): Promise<WriteOutcome> {
    const { commits, clock, leases } = this.ctx;
    const id = record._id;
    if (record.total !== null && record.total !== total) throw totalConflict(record.total, total);
    const naming: Naming = { hold: await this.ctx.quotas.admit(record.ownerId, total, false), named: false };
    try {
      const writer = randomBytes(6).toString('hex');
      const work = await commits.commit(
        id,
        async (view): Promise<Work> => {
          const { state } = view;
          if (isWithoutBookkeeping(state)) return { assemblies: [], complete: false, total: null, gone: true };
          checkUploadInForce(state, record);
          settleTotal(record, state, { start: 0, end: 0, total });
          const namesTotal = record.total === null && state.total === null;
          naming.named = namesTotal;
          if (namesTotal && naming.hold.bytes != null) state.held = total;
          if (record.total === null) state.total = total;
          return claimWork(view, total, [PartGrid.partCount(total)], clock(), leases, writer);
        },
        timings,
      );
      countTakeovers(this.ctx.metrics, work.takenOver);
      if (work.gone) {
        // Completed (or removed) since the request read its record.
        const ready = await this.ctx.objects.head(record.s3Key);
        if (ready?.contentLength === total) return { id, completedNow: false, completed: true };
        if (ready) throw totalConflict(ready.contentLength, total);
        throw expired(id);
      }
      const completedNow = await this.completion.finish(record, work, writer, timings);
      return { id, completedNow, completed: completedNow };
    } finally {
      if (!naming.named) await naming.hold.release();
    }
  }

  /**
   * Whether the upload was removed under this write (expired or deleted: marked, or gone with no
   * object), which then fails like a later write, 404: its S3 upload aborted, its pieces deleted.
   */
  private async removedUnder(record: UploadRecord): Promise<boolean> {
    const state = await this.ctx.book.state(record._id).catch(() => null);
    if (!state) return false;
    return !!state.expiring || (state.version === 0 && !(await this.ctx.objects.head(record.s3Key)));
  }

  /** Whether S3 answers that it holds no such multipart upload (false when it does, or does not answer). */
  private async uploadGone(record: UploadRecord): Promise<boolean> {
    try {
      await this.ctx.objects.listParts(record.s3Key, record.uploadId);
      return false;
    } catch (error) {
      return isNoSuchUpload(error);
    }
  }

  /** Moves the expiry of an upload that is written to (see extendedExpiry); returns the expiry in force. */
  private async keepAlive(record: UploadRecord): Promise<number> {
    const moved = extendedExpiry(record, this.ctx.clock().getTime(), this.ctx.uploadTtlMs);
    if (moved === null) return record.expiresAt.getTime();
    await this.ctx.book.extend(record._id, new Date(moved));
    record.expiresAt = new Date(moved);
    return moved;
  }
}

/**
 * A failure an upload removed under its write causes: S3's (NoSuchUpload, NoSuchKey, a 500 while
 * the upload is aborted) or a claim lost with the bookkeeping; not a refusal of the request's input.
 */
const failedByRemoval = (error: unknown): boolean =>
  isNotFound(error) || isS3Unavailable(error) || (error instanceof ServiceError && error.status >= 500);

/** S3 closed the connection under a write (not a timeout: a hung S3 gets no second call here). */
const cutOff = (error: unknown): boolean => ['ECONNRESET', 'EPIPE'].includes((error as { code?: string }).code ?? '');

/** A failure after which the bookkeeping may still change as asked: Redis did not answer in time. */
const outcomeInDoubt = (error: unknown): boolean => hasErrorCode(error, 'CP_ERR_REDIS_UNAVAILABLE');

/** The parts whose work a write's record commit may claim: those it touches, and the final one. */
function claimable(wanted: ByteRange, total: number | null): number[] {
  const parts = partsTouched(wanted);
  return total === null ? parts : [...new Set([...parts, PartGrid.partCount(total)])];
}

/** A write naming an upload's total: its hold on the owner's quota, and whether its commit named the total. */
type Naming = { hold: Hold; named: boolean };
