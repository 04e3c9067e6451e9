import { MongoServerError, type Collection, type Db } from 'mongodb';

interface ClaimDoc {
  _id: string;
  since: Date;
}

/**
 * Exclusive claims built on the one write that is atomic on every MongoDB-compatible server,
 * FerretDB included: inserting a document with a given `_id`. Of concurrent claims of one name,
 * exactly one insert succeeds. A claim older than its lease can be taken over (its holder is
 * presumed dead).
 */
export class Claims {
  private readonly claims: Collection<ClaimDoc>;

  constructor(db: Db, name: string) {
    this.claims = db.collection<ClaimDoc>(name);
  }

  /** True when this caller now holds the claim `id`. */
  async acquire(id: string, now: Date, leaseMs: number): Promise<boolean> {
    if (await this.insert(id, now)) return true;
    const held = await this.claims.findOne({ _id: id });
    if (held && held.since.getTime() > now.getTime() - leaseMs) return false;
    // Stale (or just released): remove that very claim, then race for a new one by insert.
    if (held) await this.claims.deleteOne({ _id: id, since: held.since });
    return this.insert(id, now);
  }

  async release(id: string): Promise<void> {
    await this.claims.deleteOne({ _id: id });
  }

  private async insert(id: string, now: Date): Promise<boolean> {
    try {
      await this.claims.insertOne({ _id: id, since: now });
      return true;
    } catch (error) {
      if (isDuplicateKey(error)) return false;
      throw error;
    }
  }
}

export function isDuplicateKey(error: unknown): boolean {
  return error instanceof MongoServerError && error.code === 11000;
}
