import { createHash, randomBytes } from 'node:crypto';
import type { Collection, Db } from 'mongodb';

export interface ApiKeyDoc {
  _id: string; // sha256 of the key: the key itself is never stored
  label: string;
  createdAt: Date;
  /** The key may ask for `free=true` (no chain validation). Absent on older keys: false. */
  allowFree?: boolean;
}

/** What a valid key may do. */
export interface ApiKeyGrant {
  allowFree: boolean;
}

/** Whether an api key is registered (the session-service's question at every refresh). */
export interface ApiKeyChecker {
  isValid(apiKey: string): Promise<boolean>;
}

/**
 * Api keys: created by the operator, checked on every sign-in (by the auth-service) and every
 * refresh (by the session-service), each reading the same collection.
 */
export class ApiKeyStore implements ApiKeyChecker {
  private readonly docs: Collection<ApiKeyDoc>;
  private readonly known = new Map<string, { until: number; grant: ApiKeyGrant }>();

  constructor(
    db: Db,
    private readonly rememberMs = 30_000,
  ) {
    this.docs = db.collection<ApiKeyDoc>('api_keys');
  }

  /**
   * A new key, printed once by the admin command; only its hash is kept. 256 bits from the
   * CSPRNG as 64 lower-case hex digits (keys made earlier were UUIDs; they keep working).
   */
  async create(label: string, now: Date, opts: { allowFree?: boolean } = {}): Promise<string> {
    const key = randomBytes(32).toString('hex');
    await this.docs.insertOne({
      _id: hashOf(key),
      label,
      createdAt: now,
      ...(opts.allowFree ? { allowFree: true } : {}),
    });
    return key;
  }

  async isValid(key: string): Promise<boolean> {
    return (await this.grantOf(key)) !== undefined;
  }

  /** What the key may do, or undefined when it is not a key. Remembered for `rememberMs`. */
  async grantOf(key: string): Promise<ApiKeyGrant | undefined> {
    const id = hashOf(key);
    const known = this.known.get(id);
    if (known !== undefined && known.until > Date.now()) return known.grant;
    const doc = await this.docs.findOne({ _id: id }, { projection: { allowFree: 1 } });
    if (!doc) return undefined;
    const grant = { allowFree: doc.allowFree === true };
    if (this.known.size > 10_000) this.known.clear();
    this.known.set(id, { until: Date.now() + this.rememberMs, grant });
    return grant;
  }

  async revoke(key: string): Promise<boolean> {
    this.known.delete(hashOf(key));
    return (await this.docs.deleteOne({ _id: hashOf(key) })).deletedCount === 1;
  }
}

const hashOf = (key: string): string => createHash('sha256').update(key.trim().toLowerCase()).digest('hex');
