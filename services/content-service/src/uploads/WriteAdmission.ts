import { ServiceError } from '@cp/errors';
import { type ContentRange, MAX_CONTENT_SIZE, MAX_RANGES_PER_PART, PART_SIZE } from '@cp/protocol';
import { type PartRanges, type UploadRecord, type UploadState } from '../store/UploadBook';
import { type ByteRange, classifyRange, PartGrid } from './PartGrid';

/**
 * The rules a write must pass, as pure functions of what the request says and what the content's
 * bookkeeping holds: no I/O here, so they are tested with plain objects.
 */

/** How long claims hold before another request may take them over (their holder presumed dead). */
export interface Leases {
  /** How long a completion may stay claimed before another request takes it over. */
  completionLeaseMs: number;
  /** How long a part's assembly (or an aligned write into it) may stay claimed before another request takes it over. */
  assemblyLeaseMs: number;
}

/** What a write request is, once its headers passed: where it goes next. */
export type Admission =
  /** One PutObject of the whole content; its total is known only at the body's end when null. */
  | { kind: 'whole'; total: number | null }
  /** A POST of a range: a new multipart content. */
  | { kind: 'create'; range: ContentRange }
  /** A PUT of a range of an existing content. */
  | { kind: 'range'; contentId: string; range: ContentRange };

const wholeTooLarge = () =>
  ServiceError.of(
    'partTooLarge',
    `a single-request upload may carry at most ${PART_SIZE} bytes; send larger contents in parts with Content-Range`,
  );

/** Checks a write's headers against the size limits and each other (413, 400), before any body byte is read. */
export function admitWrite(request: {
  contentId: string | null;
  range: ContentRange | null;
  declaredLength: number | null;
}): Admission {
  const { range, contentId, declaredLength } = request;
  if (range === null) {
    if (contentId !== null) throw ServiceError.of('missingContentRange', 'Content-Range is required on PUT');
    if (declaredLength !== null && declaredLength > PART_SIZE) throw wholeTooLarge();
    return { kind: 'whole', total: declaredLength };
  }
  const { start, end, total } = range;
  const length = end - start + 1;
  if (length > PART_SIZE)
    throw ServiceError.of('partTooLarge', `a part may carry at most ${PART_SIZE} bytes; this one carries ${length}`);
  if (total !== null && total > MAX_CONTENT_SIZE)
    throw ServiceError.of('contentTooLarge', `a content may be at most ${MAX_CONTENT_SIZE} bytes`);
  if (end >= MAX_CONTENT_SIZE)
    throw ServiceError.of('contentTooLarge', `byte ${end} lies past the content limit of ${MAX_CONTENT_SIZE} bytes`);
  if (declaredLength !== null && declaredLength !== length) {
    throw ServiceError.of(
      'bodyLengthMismatch',
      `Content-Length ${declaredLength} differs from the ${length} bytes Content-Range names`,
    );
  }
  if (contentId === null)
    return start === 0 && total !== null && end === total - 1 ? { kind: 'whole', total } : { kind: 'create', range };
  return { kind: 'range', contentId, range };
}

/** The 413 of a chunked one-shot body that ran past the limit. */
export function wholeBodyTooLarge(): ServiceError {
  return wholeTooLarge();
}

/** The total in force after this request, checked against what is known: 409 on a contradiction. */
export function settleTotal(
  record: Pick<UploadRecord, 'total'>,
  state: UploadState,
  range: ContentRange,
): number | null {
  const known = record.total ?? state.total;
  if (range.total !== null) {
    if (known !== null && known !== range.total) throw totalConflict(known, range.total);
    if (known === null && state.lastByte >= range.total) {
      throw ServiceError.of(
        'totalConflict',
        `the total ${range.total} is smaller than the ${state.lastByte + 1} bytes already received`,
      );
    }
  }
  const total = known ?? range.total;
  if (total !== null && range.end >= total) {
    throw ServiceError.of('rangePastTotal', `Content-Range end ${range.end} is not below the content's total ${total}`);
  }
  return total;
}

/** Refuses writes that would clash with received bytes or with work in progress (other than `writer`'s own part write). */
export function checkWritable(
  state: UploadState,
  parts: PartRanges[],
  wanted: ByteRange,
  leases: Leases,
  now: Date,
  writer?: string,
): void {
  if (state.expiring) throw expired(state._id);
  if (state.completing && !isStale(state.completing, leases.completionLeaseMs, now)) throw completing();
  const received = parts.flatMap((p) => p.pieces);
  const verdict = classifyRange(wanted, received);
  if (verdict === 'overlap') throw overlapConflict(wanted, received);
  const crowded = parts.find((p) => p.pieces.length >= MAX_RANGES_PER_PART);
  if (verdict === 'new' && crowded) {
    throw ServiceError.of(
      'partTooFragmented',
      `part ${crowded.k} already holds ${crowded.pieces.length} ranges, the most one part may be sent in; send the rest of it in larger ranges`,
    );
  }
  if (parts.some((p) => p.assembling && !isStale(p.assembling, leases.assemblyLeaseMs, now))) {
    throw ServiceError.of('partAssembling');
  }
  if (parts.some((p) => isBeingWritten(p, leases, now) && p.writing!.by !== writer)) {
    throw ServiceError.of('partWriting');
  }
}

/** A claim taken at `since` has outlived its lease: its holder is presumed dead. */
export function isStale(since: Date, leaseMs: number, now: Date): boolean {
  return since.getTime() < now.getTime() - leaseMs;
}

/** An aligned write into this S3 part is under way (a claim older than the assembly lease is presumed dead). */
export function isBeingWritten(part: PartRanges, leases: Leases, now: Date): boolean {
  return !!part.writing && !isStale(new Date(part.writing.since), leases.assemblyLeaseMs, now);
}

/**
 * Whether the state's last byte moves to `b`. While the total is unknown it is exact (it decides
 * whether a total named later contradicts received bytes); once the total is known it only bounds
 * which grid parts have bytes, so it moves only into a new part, and most pieces leave the state
 * document unwritten.
 */
export function advancesLastByte(state: UploadState, total: number | null, b: number): boolean {
  if (b <= state.lastByte) return false;
  return total === null || state.lastByte < 0 || PartGrid.partNumberAt(b) > PartGrid.partNumberAt(state.lastByte);
}

/** An existing content has bookkeeping until it is completed or removed; a state without any means it is. */
export function isWithoutBookkeeping(state: UploadState): boolean {
  return state.version === 0;
}

/** The grid parts a range has bytes in. */
export function partsTouched(r: ByteRange): number[] {
  const out: number[] = [];
  for (let k = PartGrid.partNumberAt(r.a); k <= PartGrid.partNumberAt(r.b); k++) out.push(k);
  return out;
}

/** An upload's expiry is moved on by a write once this share of its time to live has passed. */
const EXTEND_EVERY = 0.01;
/** However busy, an upload expires this many times its time to live after its creation. */
export const MAX_LIFE_TTLS = 2;

/**
 * An upload that is written to is not abandoned: a write moves its expiry to a full time to live
 * from now, but never past `MAX_LIFE_TTLS` times the time to live from its creation (the S3
 * lifecycle backstop aborts multipart uploads by age). At most once per `EXTEND_EVERY` of the
 * time to live, so that most writes leave the record alone. Null: the expiry stays.
 */
export function extendedExpiry(
  record: Pick<UploadRecord, 'createdAt' | 'expiresAt'>,
  now: number,
  ttl: number,
): number | null {
  const moved = Math.min(now + ttl, record.createdAt.getTime() + MAX_LIFE_TTLS * ttl);
  return moved - record.expiresAt.getTime() < ttl * EXTEND_EVERY ? null : moved;
}

export function totalConflict(stored: number, given: number): ServiceError {
  return ServiceError.of('totalConflict', `the content's total is ${stored}, not ${given}`);
}

export function expired(id: string): ServiceError {
  return ServiceError.of('contentNotFound', `there is no content ${id}: its upload expired`);
}

export function completing(): ServiceError {
  return ServiceError.of('contentCompleting');
}

function overlapConflict(wanted: ByteRange, received: readonly ByteRange[]): ServiceError {
  const clash = received.find((r) => !(r.b < wanted.a || r.a > wanted.b) && !(r.a === wanted.a && r.b === wanted.b));
  return ServiceError.of(
    'rangeOverlap',
    `bytes ${wanted.a}-${wanted.b} partly overlap bytes ${clash ? `${clash.a}-${clash.b}` : ''} already received; resend exactly the same range or only missing bytes`,
  );
}
