import { ServiceError } from '@cp/errors';

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
  constructor(
    private readonly baseUrl: string,
    private readonly secret: string,
  ) {}

  async create(userId: string, owners: string[], thumbprint: string): Promise<SessionPair> {
    let res: Response;
    try {
      res = await fetch(new URL('/internal/sessions', this.baseUrl), {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-internal-secret': this.secret },
        body: JSON.stringify({ userId, owners, thumbprint }),
        signal: AbortSignal.timeout(10_000),
      });
    } catch (error) {
      throw ServiceError.of('CreateSessionError', 'the session service does not answer; retry later', { cause: error });
    }
    if (res.status === 503) throw ServiceError.of('CreateSessionError');
    if (res.status !== 201) throw ServiceError.of('CreateSessionError', 'the session could not be created', { status: 500 });
    const body = (await res.json()) as Partial<SessionPair>;
    if (typeof body.Sid !== 'string' || typeof body.RefreshToken !== 'string') throw ServiceError.of('CreateSessionError', 'the session could not be created', { status: 500 });
    return { Sid: body.Sid, RefreshToken: body.RefreshToken };
  }
}
