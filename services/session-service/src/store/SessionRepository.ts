import { MongoServerError, type Collection, type Db } from 'mongodb';

/** One sign-in. Written once; afterwards only `revokedAt` is ever set (idempotently). */
export interface FamilyDoc {
  _id: string;
  userId: string;
  owners: string[];
  /** SHA-1 of the certificate signed in with (upper-case hex); absent on families from before it was kept. */
  thumbprint?: string;
  createdAt: Date;
  revokedAt: Date | null;
}

/**
 * One Sid + RefreshToken pair of a family, keyed by the Sid's hash. Inserted and deleted; the only
 * updates set the two marks below, which are never cleared.
 */
export interface PairDoc {
  _id: string; // sha256 of the Sid
  refreshHash: string; // sha256 of the RefreshToken
  familyId: string;
  userId: string;
  owners: string[];
  sidExpiresAt: Date;
  refreshExpiresAt: Date;
  createdAt: Date;
  /**
   * True on pairs that carry what a sid lookup needs of their family (its thumbprint, and its
   * revocation as `revokedAt`), so that one read of the pair answers it. Pairs written before
   * this was kept lack it, and their lookups read the family and the rotation claim as well.
   */
  carriesFamily?: true;
  /** The family's certificate thumbprint (upper-case hex), copied when the pair is written. */
  thumbprint?: string;
  /**
   * The family's sign-in time, copied when the pair is written, so that a refresh needs no read
   * of the family before its claim. Absent on pairs from before it was kept: those read it.
   */
  familyCreatedAt?: Date;
  /** Set on every pair of a family when the family is revoked (before and after the family's own mark). */
  revokedAt?: Date;
  /**
   * Set before a rotation of this pair is claimed: a lookup of a pair so marked reads the
   * rotation claim too (a crash between the claim and the pair's deletion leaves it in place).
   */
  rotating?: true;
}

/**
 * The claim that a RefreshToken was used, keyed by its hash. Inserting it is the rotation's one
 * atomic step: of concurrent refreshes with one token exactly one insert succeeds, on FerretDB as
 * on MongoDB. Its existence also marks the pair as dead and a later presentation as reuse.
 */
export interface RotationDoc {
  _id: string; // sha256 of the used RefreshToken
  familyId: string;
  sidHash: string;
  at: Date;
  expiresAt: Date; // when the used RefreshToken would have expired; kept until then for reuse detection
  /** The pair issued for this token (hashes, expiries, owners): enough to write its PairDoc again. */
  next?: NextPair;
  /** That pair's Sid and RefreshToken, encrypted under a key derived from the used token (SealedPair). */
  sealed?: string;
  /** Until when a retry with the used token gets `sealed` back; the sweeper erases `sealed` after it. */
  graceUntil?: Date;
}

export type NextPair = Omit<PairDoc, 'familyId'>;

/**
 * Finds a pair by its RefreshToken's hash with an `_id` lookup: FerretDB scans the whole
 * collection for any other filter, which made refreshes slow down with every session kept.
 */
interface RefreshKeyDoc {
  _id: string; // sha256 of the RefreshToken
  sidHash: string;
  expiresAt: Date;
}

/** Every MongoDB read and write of the session-service. */
export class SessionRepository {
  readonly families: Collection<FamilyDoc>;
  readonly pairs: Collection<PairDoc>;
  readonly rotations: Collection<RotationDoc>;
  private readonly refreshKeys: Collection<RefreshKeyDoc>;

  constructor(db: Db) {
    this.families = db.collection<FamilyDoc>('session_families');
    this.pairs = db.collection<PairDoc>('session_pairs');
    this.rotations = db.collection<RotationDoc>('session_rotations');
    this.refreshKeys = db.collection<RefreshKeyDoc>('session_refresh_keys');
  }

  async ensureIndexes(): Promise<void> {
    await this.pairs.createIndex({ refreshHash: 1 }, { unique: true });
    await this.pairs.createIndex({ familyId: 1 });
    await this.pairs.createIndex({ refreshExpiresAt: 1 });
    await this.rotations.createIndex({ expiresAt: 1 });
    await this.rotations.createIndex({ familyId: 1 });
    await this.families.createIndex({ createdAt: 1 });
    await this.families.createIndex({ revokedAt: 1 });
    await this.refreshKeys.createIndex({ expiresAt: 1 });
  }

  async insertFamily(doc: FamilyDoc): Promise<void> {
    await this.families.insertOne(doc);
  }

  async insertPair(doc: PairDoc): Promise<void> {
    await this.pairs.insertOne(doc);
    await this.refreshKeys.insertOne({ _id: doc.refreshHash, sidHash: doc._id, expiresAt: doc.refreshExpiresAt });
  }

  /**
   * Writes a pair that may have been written already (a refresh finishing a rotation that a
   * concurrent or crashed one claimed): duplicate keys mean it is there.
   */
  async ensurePair(doc: PairDoc): Promise<void> {
    await ignoreDuplicate(this.pairs.insertOne(doc));
    await ignoreDuplicate(
      this.refreshKeys.insertOne({ _id: doc.refreshHash, sidHash: doc._id, expiresAt: doc.refreshExpiresAt }),
    );
  }

  findPairBySid(sidHash: string): Promise<PairDoc | null> {
    return this.pairs.findOne({ _id: sidHash });
  }

  async findPairByRefresh(refreshHash: string): Promise<PairDoc | null> {
    const key = await this.refreshKeys.findOne({ _id: refreshHash });
    if (!key) return null;
    const pair = await this.pairs.findOne({ _id: key.sidHash });
    return pair && pair.refreshHash === refreshHash ? pair : null;
  }

  findRotation(refreshHash: string): Promise<RotationDoc | null> {
    return this.rotations.findOne({ _id: refreshHash });
  }

  findFamily(familyId: string): Promise<FamilyDoc | null> {
    return this.families.findOne({ _id: familyId });
  }

  /** True when this caller is the one that rotates `doc._id`; false when it was used before. */
  async claimRotation(doc: RotationDoc): Promise<boolean> {
    return ignoreDuplicate(this.rotations.insertOne(doc));
  }

  /**
   * Deletes a rotated pair. Its refresh key stays until the sweeper removes it at the token's
   * expiry, as the rotation claim does: it leads to no pair, and the claim answers first.
   */
  async deletePair(sidHash: string): Promise<void> {
    await this.pairs.deleteOne({ _id: sidHash });
  }

  /** Marks a pair before its rotation is claimed: its lookups read the rotation claim from then on. */
  async markRotating(sidHash: string): Promise<void> {
    await this.pairs.updateOne({ _id: sidHash }, { $set: { rotating: true } });
  }

  /** Marks pairs of a revoked family, each by its `_id` alone (a filter the local server can serve from its index). */
  async markPairsRevoked(sidHashes: string[], at: Date): Promise<void> {
    await Promise.all(sidHashes.map((_id) => this.pairs.updateOne({ _id }, { $set: { revokedAt: at } })));
  }

  /** Idempotent: once revoked, a family stays revoked (the time recorded is one of the revocations'). */
  async revokeFamily(familyId: string, at: Date): Promise<void> {
    const family = await this.families.findOne({ _id: familyId });
    if (family && !family.revokedAt) await this.families.updateOne({ _id: familyId }, { $set: { revokedAt: at } });
  }

  /** The families (sign-ins) of a user not revoked yet. Not by `_id`: for the operator's command line, not a hot path. */
  async liveFamiliesOfUser(userId: string): Promise<string[]> {
    const docs = await this.families.find({ userId, revokedAt: null }, { projection: { _id: 1 } }).toArray();
    return docs.map((d) => d._id);
  }

  /** Families revoked after `since`, at most `limit` (the most recent first). For the sweeper, not a request. */
  async familiesRevokedSince(since: Date, limit: number): Promise<string[]> {
    const docs = await this.families
      .find({ revokedAt: { $gt: since } }, { projection: { _id: 1 } })
      .sort({ revokedAt: -1 })
      .limit(limit)
      .toArray();
    return docs.map((d) => d._id);
  }

  async sidHashesOfFamily(familyId: string): Promise<string[]> {
    const docs = await this.pairs.find({ familyId }, { projection: { _id: 1 } }).toArray();
    return docs.map((d) => d._id);
  }

  private familyCursor = '';

  /**
   * Deletes what has expired; returns how many records went. Families are visited in batches by
   * id, resuming where the last sweep stopped, and go once no pair of theirs is left.
   */
  async sweep(now: Date, familyMaxAgeMs: number, batch = 200): Promise<number> {
    let removed = (await this.pairs.deleteMany({ refreshExpiresAt: { $lte: now } })).deletedCount;
    removed += (await this.rotations.deleteMany({ expiresAt: { $lte: now } })).deletedCount;
    // Past its grace window a sealed pair is never opened again: erase it.
    await this.rotations.updateMany(
      { graceUntil: { $lte: now }, sealed: { $exists: true } },
      { $unset: { sealed: '' } },
    );
    await this.refreshKeys.deleteMany({ expiresAt: { $lte: now } });
    const old = await this.families
      .find(
        { createdAt: { $lte: new Date(now.getTime() - familyMaxAgeMs) }, _id: { $gt: this.familyCursor } },
        { projection: { _id: 1 } },
      )
      .sort({ _id: 1 })
      .limit(batch)
      .toArray();
    this.familyCursor = old.length === batch ? old[old.length - 1]!._id : '';
    for (const { _id } of old) {
      if ((await this.pairs.countDocuments({ familyId: _id }, { limit: 1 })) > 0) continue;
      await this.rotations.deleteMany({ familyId: _id });
      removed += (await this.families.deleteOne({ _id })).deletedCount;
    }
    return removed;
  }
}

/** True when the insert happened, false when the key was taken. */
async function ignoreDuplicate(insert: Promise<unknown>): Promise<boolean> {
  try {
    await insert;
    return true;
  } catch (error) {
    if (error instanceof MongoServerError && error.code === 11000) return false;
    throw error;
  }
}
