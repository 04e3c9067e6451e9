import { randomBytes } from 'node:crypto';
import { MongoServerError, type Collection, type Db } from 'mongodb';

interface ClaimDoc {
  _id: string;
  /** When the holder took or last renewed the claim. */
  since: Date;
  /** The holder's token: only it renews or releases the claim. */
  token?: string;
}

/**
 * Exclusive claims built on the one write that is atomic on every MongoDB-compatible server,
 * FerretDB included: inserting a document with a given `_id`. Of concurrent claims of one name,
 * exactly one insert succeeds. A claim not renewed within its lease can be taken over (its holder
 * is presumed dead). Taking over a stale claim is a delete then an insert, and FerretDB applies
 * the delete's filter unlocked, so two takers can overlap: these claims only keep work from
 * running twice in the common case; what must never happen twice is fenced by the versioned
 * bookkeeping itself (see UploadLedger).
 */
export class Claims {
  private readonly claims: Collection<ClaimDoc>;

  constructor(db: Db, name: string) {
    this.claims = db.collection<ClaimDoc>(name);
  }

  /** The holder's token when this caller now holds the claim `id`; null when another holds it. */
  async acquire(id: string, now: Date, leaseMs: number): Promise<string | null> {
    const token = randomBytes(8).toString('hex');
    if (await this.insert(id, now, token)) return token;
    const held = await this.claims.findOne({ _id: id });
    if (held && held.since.getTime() > now.getTime() - leaseMs) return null;
    // Stale (or just released): remove that very claim, then race for a new one by insert.
    if (held) await this.claims.deleteOne({ _id: id, since: held.since });
    return (await this.insert(id, now, token)) ? token : null;
  }

  /** Moves the claim's time on; false when it is no longer held with `token`. */
  async renew(id: string, token: string, now: Date): Promise<boolean> {
    const out = await this.claims.updateOne({ _id: id, token }, { $set: { since: now } });
    return out.matchedCount === 1;
  }

  /** Gives the claim up (only the holder's own claim when `token` is given). */
  async release(id: string, token?: string): Promise<void> {
    await this.claims.deleteOne(token === undefined ? { _id: id } : { _id: id, token });
  }

  private async insert(id: string, now: Date, token: string): Promise<boolean> {
    try {
      await this.claims.insertOne({ _id: id, since: now, token });
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
