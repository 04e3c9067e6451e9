import type { Principal } from '../http/Principal';
import { ServiceError } from '@cp/errors';
import { InternalClient } from '@cp/service-kit';
import type { SessionValidator } from '../http/authenticate';

/**
 * Asks the session-service's internal endpoint whether an auth.sid is a live session. It sits on
 * every auth.sid the cache cannot answer, hence the client's kept-alive sockets.
 */
export class HttpSessionValidator implements SessionValidator {
  private readonly client: InternalClient;

  constructor(baseUrl: string, secret?: string, timeoutMs = 5_000) {
    this.client = new InternalClient({
      baseUrl,
      secret,
      timeoutMs,
      unavailable: (cause) =>
        ServiceError.of('sessionServiceUnavailable', 'the session service does not answer; retry later', { cause }),
    });
  }

  async validate(sid: string): Promise<Principal | null> {
    const answer = await this.client.post('/internal/sessions/validate', { sid });
    if (answer.status === 404 || answer.status === 401) return null;
    if (answer.status !== 200)
      throw ServiceError.of('sessionServiceUnavailable', `the session service answered ${answer.status}`);
    const body = JSON.parse(answer.body) as { userId: string; owners: string[]; thumbprint?: unknown };
    return {
      kind: 'session',
      subject: body.userId,
      owners: body.owners.map((o) => o.toLowerCase()),
      ...(typeof body.thumbprint === 'string' ? { thumbprint: body.thumbprint } : {}),
    };
  }
}
