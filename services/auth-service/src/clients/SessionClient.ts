import { ServiceError } from '@cp/errors';
import { InternalClient } from '@cp/service-kit';

export interface SessionPair {
  Sid: string;
  RefreshToken: string;
}

/** Creates sessions through the session-service's internal endpoint. */
export interface SessionCreator {
  /** `thumbprint`: the certificate signed in with; each refresh checks it is still registered. */
  create(userId: string, owners: string[], thumbprint: string): Promise<SessionPair>;
}

export class HttpSessionClient implements SessionCreator {
  private readonly client: InternalClient;

  constructor(baseUrl: string, secret: string) {
    this.client = new InternalClient({
      baseUrl,
      secret,
      timeoutMs: 10_000,
      unavailable: (cause) =>
        ServiceError.of('CreateSessionError', 'the session service does not answer; retry later', { cause }),
    });
  }

  async create(userId: string, owners: string[], thumbprint: string): Promise<SessionPair> {
    const res = await this.client.post('/internal/sessions', { userId, owners, thumbprint });
    if (res.status === 503) throw ServiceError.of('CreateSessionError');
    if (res.status !== 201)
      throw ServiceError.of('CreateSessionError', 'the session could not be created', { status: 500 });
    const body = JSON.parse(res.body) as Partial<SessionPair>;
    if (typeof body.Sid !== 'string' || typeof body.RefreshToken !== 'string')
      throw ServiceError.of('CreateSessionError', 'the session could not be created', { status: 500 });
    return { Sid: body.Sid, RefreshToken: body.RefreshToken };
  }
}
