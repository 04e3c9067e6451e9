import { MongoServerError, type Collection, type Db } from 'mongodb';

/** One sign-in. Written once; afterwards only `revokedAt` is ever set (idempotently). */
export interface FamilyDoc {
  _id: string;
  userId: string;
  owners: string[];
  createdAt: Date;
  revokedAt: Date | null;
}

/** One Sid + RefreshToken pair of a family, keyed by the Sid's hash. Never updated, only inserted and deleted. */
export interface PairDoc {
  _id: string; // sha256 of the Sid
  refreshHash: string; // sha256 of the RefreshToken
  familyId: string;
  userId: string;
  owners: string[];
  sidExpiresAt: Date;
  refreshExpiresAt: Date;
  createdAt: Date;
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
}

/** Every MongoDB read and write of the session-service. */
export class SessionRepository {
  readonly families: Collection<FamilyDoc>;
  readonly pairs: Collection<PairDoc>;
  readonly rotations: Collection<RotationDoc>;

  constructor(db: Db) {
    this.families = db.collection<FamilyDoc>('session_families');
    this.pairs = db.collection<PairDoc>('session_pairs');
    this.rotations = db.collection<RotationDoc>('session_rotations');
  }

  async ensureIndexes(): Promise<void> {
    await this.pairs.createIndex({ refreshHash: 1 }, { unique: true });
    await this.pairs.createIndex({ familyId: 1 });
    await this.pairs.createIndex({ refreshExpiresAt: 1 });
    await this.rotations.createIndex({ expiresAt: 1 });
    await this.rotations.createIndex({ familyId: 1 });
    await this.families.createIndex({ createdAt: 1 });
  }

  async insertFamily(doc: FamilyDoc): Promise<void> {
    await this.families.insertOne(doc);
  }

  async insertPair(doc: PairDoc): Promise<void> {
    await this.pairs.insertOne(doc);
  }

  findPairBySid(sidHash: string): Promise<PairDoc | null> {
    return this.pairs.findOne({ _id: sidHash });
  }

  findPairByRefresh(refreshHash: string): Promise<PairDoc | null> {
    return this.pairs.findOne({ refreshHash });
  }

  findRotation(refreshHash: string): Promise<RotationDoc | null> {
    return this.rotations.findOne({ _id: refreshHash });
  }

  findFamily(familyId: string): Promise<FamilyDoc | null> {
    return this.families.findOne({ _id: familyId });
  }

  /** True when this caller is the one that rotates `doc._id`; false when it was used before. */
  async claimRotation(doc: RotationDoc): Promise<boolean> {
    try {
      await this.rotations.insertOne(doc);
      return true;
    } catch (error) {
      if (error instanceof MongoServerError && error.code === 11000) return false;
      throw error;
    }
  }

  async deletePair(sidHash: string): Promise<void> {
    await this.pairs.deleteOne({ _id: sidHash });
  }

  /** Idempotent: the first revocation time wins, repeating it changes nothing that matters. */
  async revokeFamily(familyId: string, at: Date): Promise<void> {
    await this.families.updateOne({ _id: familyId, revokedAt: null }, { $set: { revokedAt: at } });
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
    const old = await this.families
      .find({ createdAt: { $lte: new Date(now.getTime() - familyMaxAgeMs) }, _id: { $gt: this.familyCursor } }, { projection: { _id: 1 } })
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
