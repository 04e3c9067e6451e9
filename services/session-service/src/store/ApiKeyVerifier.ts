import { createHash } from 'node:crypto';
import { ServiceError } from '@cp/errors';

/** Longer than any api key the auth-service issues, by a wide margin. */
export const MAX_API_KEY_LENGTH = 1024;

/** Whether an api key is registered; answered by the auth-service, which owns the keys. */
export interface ApiKeyChecker {
  isValid(apiKey: string): Promise<boolean>;
}

/**
 * Asks the auth-service's internal endpoint, remembering keys found valid for a short while so a
 * refresh costs no extra round trip most of the time.
 */
export class HttpApiKeyVerifier implements ApiKeyChecker {
  private readonly known = new Map<string, number>();

  constructor(
    private readonly authServiceUrl: string,
    private readonly secret: string,
    private readonly rememberMs = 60_000,
  ) {}

  async isValid(apiKey: string): Promise<boolean> {
    // No issued key is this long; asking about one would only hit the internal endpoint's body
    // limit (a 12 KB key came back 413 and was answered 503).
    if (apiKey.length > MAX_API_KEY_LENGTH) return false;
    const id = createHash('sha256').update(apiKey).digest('hex');
    const until = this.known.get(id);
    if (until !== undefined && until > Date.now()) return true;
    let res: Response;
    try {
      res = await fetch(new URL('/internal/api-keys/verify', this.authServiceUrl), {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-internal-secret': this.secret },
        body: JSON.stringify({ apiKey }),
        signal: AbortSignal.timeout(5_000),
      });
    } catch (error) {
      throw ServiceError.of('ServiceUnavailable', 'api keys cannot be checked now; retry later', { cause: error });
    }
    if (res.status === 404 || res.status === 413) return false;
    if (!res.ok) throw ServiceError.of('ServiceUnavailable', 'api keys cannot be checked now; retry later');
    if (this.known.size > 10_000) this.known.clear();
    this.known.set(id, Date.now() + this.rememberMs);
    return true;
  }
}
