import { ServiceError } from '@cp/errors';
import { createHash } from 'node:crypto';
import { InternalClient } from '@cp/service-kit';

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
  private readonly client: InternalClient;

  constructor(
    authServiceUrl: string,
    secret: string,
    private readonly rememberMs = 60_000,
  ) {
    this.client = new InternalClient({
      baseUrl: authServiceUrl,
      secret,
      timeoutMs: 5_000,
      unavailable: (cause) =>
        ServiceError.of('ServiceUnavailable', 'api keys cannot be checked now; retry later', { cause }),
    });
  }

  async isValid(apiKey: string): Promise<boolean> {
    // No issued key is this long; asking about one would only hit the internal endpoint's body
    // limit (a 12 KB key came back 413 and was answered 503).
    if (apiKey.length > MAX_API_KEY_LENGTH) return false;
    const id = createHash('sha256').update(apiKey).digest('hex');
    const until = this.known.get(id);
    if (until !== undefined && until > Date.now()) return true;
    const res = await this.client.post('/internal/api-keys/verify', { apiKey });
    if (res.status === 404 || res.status === 413) return false;
    if (res.status < 200 || res.status > 299) throw this.client.unavailable();
    if (this.known.size > 10_000) this.known.clear();
    this.known.set(id, Date.now() + this.rememberMs);
    return true;
  }
}
