import type { Principal } from '@cp/credentials';
import { ServiceError } from '@cp/errors';
import type { SessionValidator } from './authenticate';

/** Asks the session-service's internal endpoint whether an auth.sid is a live session. */
export class HttpSessionValidator implements SessionValidator {
  constructor(
    private readonly baseUrl: string,
    private readonly secret?: string,
  ) {}

  async validate(sid: string): Promise<Principal | null> {
    let res: Response;
    try {
      res = await fetch(new URL('/internal/sessions/validate', this.baseUrl), {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(this.secret ? { 'x-internal-secret': this.secret } : {}) },
        body: JSON.stringify({ sid }),
        signal: AbortSignal.timeout(5_000),
      });
    } catch (error) {
      throw ServiceError.unavailable('sessionServiceUnavailable', 'the session service does not answer; retry later', error);
    }
    if (res.status === 404 || res.status === 401) return null;
    if (!res.ok) throw ServiceError.unavailable('sessionServiceUnavailable', `the session service answered ${res.status}`);
    const body = (await res.json()) as { userId: string; owners: string[] };
    return { kind: 'session', subject: body.userId, owners: body.owners.map((o) => o.toLowerCase()) };
  }
}
