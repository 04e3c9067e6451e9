import { ServiceError } from '@cp/errors';

/** What the auth-service says about a signed-in user and the certificate they signed in with. */
export type Registration = { registered: true; owners: string[] } | { registered: false; reason: 'UserRemoved' | 'CertificateRemoved' };

/** Whether a user (and a certificate of theirs) is still registered; answered by the auth-service. */
export interface RegistrationChecker {
  check(userId: string, thumbprint: string | undefined): Promise<Registration>;
}

/**
 * Asks the auth-service's `/internal/registrations/check` on every refresh (no memory: a removed
 * certificate must count at the next refresh). Not answering, or answering anything but a
 * verdict, is a 503: the refresh changes nothing and can be retried.
 */
export class HttpRegistrationChecker implements RegistrationChecker {
  constructor(
    private readonly authServiceUrl: string,
    private readonly secret: string,
    private readonly timeoutMs = 5_000,
  ) {}

  async check(userId: string, thumbprint: string | undefined): Promise<Registration> {
    let res: Response;
    let body: { registered?: unknown; owners?: unknown; reason?: unknown };
    try {
      res = await fetch(new URL('/internal/registrations/check', this.authServiceUrl), {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-internal-secret': this.secret },
        body: JSON.stringify(thumbprint ? { userId, thumbprint } : { userId }),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      body = res.ok ? ((await res.json()) as typeof body) : {};
    } catch (error) {
      throw unavailable(error);
    }
    if (res.status !== 200) throw unavailable();
    if (body.registered === true && Array.isArray(body.owners) && body.owners.every((o) => typeof o === 'string')) {
      return { registered: true, owners: body.owners as string[] };
    }
    if (body.registered === false) return { registered: false, reason: body.reason === 'UserRemoved' ? 'UserRemoved' : 'CertificateRemoved' };
    throw unavailable();
  }
}

function unavailable(cause?: unknown): ServiceError {
  return ServiceError.of('ServiceUnavailable', 'the registration of the user cannot be checked now; retry later', { cause });
}
