import { ServiceError } from '@cp/errors';
import { InternalClient } from '@cp/service-kit';

/** What the auth-service says about a signed-in user and the certificate they signed in with. */
export type Registration =
  { registered: true; owners: string[] } | { registered: false; reason: 'UserRemoved' | 'CertificateRemoved' };

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
  private readonly client: InternalClient;

  constructor(authServiceUrl: string, secret: string, timeoutMs = 5_000) {
    this.client = new InternalClient({
      baseUrl: authServiceUrl,
      secret,
      timeoutMs,
      unavailable: (cause) =>
        ServiceError.of('ServiceUnavailable', 'the registration of the user cannot be checked now; retry later', {
          cause,
        }),
    });
  }

  async check(userId: string, thumbprint: string | undefined): Promise<Registration> {
    const res = await this.client.post(
      '/internal/registrations/check',
      thumbprint ? { userId, thumbprint } : { userId },
    );
    if (res.status !== 200) throw this.client.unavailable();
    let body: { registered?: unknown; owners?: unknown; reason?: unknown };
    try {
      body = JSON.parse(res.body) as typeof body;
    } catch (error) {
      throw this.client.unavailable(error);
    }
    if (body.registered === true && Array.isArray(body.owners) && body.owners.every((o) => typeof o === 'string')) {
      return { registered: true, owners: body.owners as string[] };
    }
    if (body.registered === false)
      return { registered: false, reason: body.reason === 'UserRemoved' ? 'UserRemoved' : 'CertificateRemoved' };
    throw this.client.unavailable();
  }
}
