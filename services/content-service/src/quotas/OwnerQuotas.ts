import { ServiceError } from '@cp/errors';
import type { Logger } from '@cp/logging';
import { isRefusal, UNLIMITED, type RedisQuotas } from '../store/RedisQuotas';
import type { OwnedLimitReached, UploadBook } from '../store/UploadBook';

/** The service's defaults, for owners without limits of their own; null: no limit. */
export interface QuotaDefaults {
  bytes: number | null;
  uploads: number | null;
}

/** Bytes held for a content on its way in: counted as used once it is stored, or let go. */
export interface Hold {
  /** How many bytes are held: what was asked, or less when `upTo` was asked (null: no quota). */
  readonly bytes: number | null;
  /** The owner's limit of unfinished uploads, for the book to hold at the creation (none: no limit). */
  readonly maxOwned?: number;
  /** The content is stored with `size` bytes: the hold becomes use. */
  stored(size: number): Promise<void>;
  /** Nothing was stored: the hold goes. */
  release(): Promise<void>;
}

const NO_HOLD: Hold = { bytes: null, stored: async () => undefined, release: async () => undefined };

/**
 * Per-owner quotas on bytes stored and unfinished uploads at once. A new content is checked before
 * any of its bytes is stored: its size (a one-shot's length, a multipart upload's declared total)
 * is held against the owner's limit, then counted as used when the content is ready, or let go.
 * Disabled (no store), nothing is checked or counted, and no request makes a call for it.
 *
 * Counting after S3's answer is not atomic with it: a process that dies in between leaves the
 * counters off, which the reconciliation puts right from S3: in the background after a refusal
 * (`recounts`), or by the operator's `pnpm admin quota show`.
 * A multipart upload begun without its total holds it from the write that names it (RangeWriter).
 */
export class OwnerQuotas {
  constructor(
    private readonly store: RedisQuotas | null,
    private readonly book: UploadBook,
    private readonly defaults: QuotaDefaults,
    private readonly logger: Logger,
    /** Recounts an owner from S3 in the background after a refusal (counters a crash left off); null: none. */
    private readonly recounts: { request(ownerId: string): void } | null = null,
  ) {}

  get enabled(): boolean {
    return this.store !== null;
  }

  /**
   * Before a new content's first byte: 403 `uploadQuotaExceeded` when it would be one unfinished
   * upload too many, 403 `storageQuotaExceeded` when its `bytes` do not fit; otherwise holds them.
   * `upTo` (a body whose length is known only at its end): holds as much of `bytes` as fits.
   */
  async admit(ownerId: string, bytes: number, unfinished: boolean, upTo = false): Promise<Hold> {
    const store = this.store;
    if (!store) return NO_HOLD;
    const maxOwned = unfinished ? await this.checkUploads(store, ownerId) : undefined;
    const reserved = await store.reserve(ownerId, bytes, this.defaults.bytes ?? UNLIMITED, upTo);
    if (isRefusal(reserved)) {
      this.recounts?.request(ownerId);
      throw storageQuotaExceeded(reserved.limit, reserved.held, upTo ? 1 : bytes);
    }
    const held = reserved.held;
    return {
      bytes: held,
      ...(maxOwned === undefined ? {} : { maxOwned }),
      stored: (size) => this.count(ownerId, -held, size),
      release: () => this.count(ownerId, -held, 0),
    };
  }

  // Each of these is counted once per content, however many requests (a retry, a racing DELETE,
  // the sweeper) report it.

  /** A multipart content completed: what its creation held (`held`) becomes its size in use. */
  completed(ownerId: string, id: string, held: number, size: number): Promise<void> {
    return this.count(ownerId, -held, size, `completed:${id}`);
  }

  /** An unfinished upload went (expired, deleted, failed): what its creation held goes. */
  discarded(ownerId: string, id: string, held: number): Promise<void> {
    return this.count(ownerId, -held, 0, `discarded:${id}`);
  }

  /** A ready content of `size` bytes was deleted. */
  deleted(ownerId: string, id: string, size: number): Promise<void> {
    return this.count(ownerId, 0, -size, `deleted:${id}`);
  }

  /** 403 for a body that passed the bytes its hold allowed (`upTo`): nothing of it is stored. */
  static bodyOverQuota(hold: Hold): ServiceError {
    return ServiceError.of(
      'storageQuotaExceeded',
      `the body is longer than the ${hold.bytes} bytes left of the owner's storage quota`,
    );
  }

  /** 403 for a creation the book refused: another took the owner's last place for an unfinished upload. */
  static uploadsOverQuota(refused: OwnedLimitReached): ServiceError {
    return uploadQuotaExceeded(refused.limit, refused.held);
  }

  /**
   * Refuses early (before any S3 call) an upload past the owner's limit, and gives the limit for
   * the book's create, which holds it atomically against racing creations.
   */
  private async checkUploads(store: RedisQuotas, ownerId: string): Promise<number | undefined> {
    const { limits } = await store.read(ownerId);
    const limit = limits.uploads ?? this.defaults.uploads ?? UNLIMITED;
    if (limit === UNLIMITED) return undefined;
    const open = await this.book.ownedCount(ownerId);
    if (open >= limit) throw uploadQuotaExceeded(limit, open);
    return limit;
  }

  /** Counted after the fact, never failing its request: a count that fails is put right by the reconciliation. */
  private async count(ownerId: string, reservedDelta: number, usedDelta: number, once?: string): Promise<void> {
    if (!this.store) return;
    await this.store
      .adjust(ownerId, reservedDelta, usedDelta, once)
      .catch((error: unknown) =>
        this.logger.warn(
          { ownerId, err: error },
          'could not count a change in stored bytes; the quota reconciliation puts it right',
        ),
      );
  }
}

function uploadQuotaExceeded(limit: number, open: number): ServiceError {
  return ServiceError.of(
    'uploadQuotaExceeded',
    `the owner's quota of unfinished uploads is ${limit}, and ${open} are open; complete or delete one first`,
  );
}

function storageQuotaExceeded(limit: number, held: number, needed: number): ServiceError {
  return ServiceError.of(
    'storageQuotaExceeded',
    `the owner's storage quota is ${limit} bytes, of which ${held} are stored or held for uploads; this content needs ${needed} more`,
  );
}
