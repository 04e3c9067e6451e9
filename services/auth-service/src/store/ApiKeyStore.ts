import { createHash, randomUUID } from 'node:crypto';
import type { Collection, Db } from 'mongodb';

export interface ApiKeyDoc {
  _id: string; // sha256 of the key: the key itself is never stored
  label: string;
  createdAt: Date;
}

/** Api keys: created by the operator, checked on every sign-in and refresh. */
export class ApiKeyStore {
  private readonly docs: Collection<ApiKeyDoc>;
  private readonly known = new Map<string, number>();

  constructor(
    db: Db,
    private readonly rememberMs = 30_000,
  ) {
    this.docs = db.collection<ApiKeyDoc>('api_keys');
  }

  /** A new key, printed once by the admin command; only its hash is kept. */
  async create(label: string, now: Date): Promise<string> {
    const key = randomUUID();
    await this.docs.insertOne({ _id: hashOf(key), label, createdAt: now });
    return key;
  }

  async isValid(key: string): Promise<boolean> {
    const id = hashOf(key);
    const until = this.known.get(id);
    if (until !== undefined && until > Date.now()) return true;
    const found = (await this.docs.countDocuments({ _id: id }, { limit: 1 })) > 0;
    if (found) {
      if (this.known.size > 10_000) this.known.clear();
      this.known.set(id, Date.now() + this.rememberMs);
    }
    return found;
  }

  async revoke(key: string): Promise<boolean> {
    this.known.delete(hashOf(key));
    return (await this.docs.deleteOne({ _id: hashOf(key) })).deletedCount === 1;
  }
}

const hashOf = (key: string): string => createHash('sha256').update(key.trim().toLowerCase()).digest('hex');
