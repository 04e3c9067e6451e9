import { randomBytes } from 'node:crypto';
import { ServiceError } from '@cp/errors';
import type { Logger } from '@cp/logging';
import { MIN_RSA_BITS } from '../certificates/CertificatePolicy';
import { CertUnreadable, parseCertificates, TooManyCertificates } from '../certificates/CertificateText';
import type { ChainValidator } from '../certificates/ChainValidator';
import type { RndStore } from '../store/RndStore';
import type { SessionCreator, SessionPair } from '../clients/SessionClient';
import type { UserRegistry } from '@cp/registry';
import type { Clock } from '@cp/service-kit';
import { envelopeFor, UnsupportedKey } from './EnvelopedRnd';

export interface Challenge {
  encryptedKey: Buffer;
  thumbprint: string;
}

/**
 * The certificate sign-in: authenticate issues an rnd encrypted for the certificate;
 * approve takes the decrypted rnd back and opens a session.
 */
export class CertificateSignIn {
  constructor(
    private readonly deps: {
      users: UserRegistry;
      chains: ChainValidator;
      rnds: RndStore;
      sessions: SessionCreator;
      clock: Clock;
      logger: Logger;
    },
    private readonly opts: { rndTtlSeconds: number },
  ) {}

  /**
   * `free`: the chain is not validated (the caller has checked that the api key allows it); the
   * certificate must still be registered, and an RSA key must still be strong enough.
   */
  async authenticate(body: Buffer, free: boolean): Promise<Challenge> {
    let certs;
    try {
      certs = parseCertificates(body);
    } catch (error) {
      if (error instanceof CertUnreadable) throw ServiceError.of('CertUnreadable');
      if (error instanceof TooManyCertificates)
        throw ServiceError.of('CertNotValid', `the certificate is not valid: ${error.message}`);
      throw error;
    }
    const [leaf, ...rest] = certs;
    const now = this.deps.clock();
    // The registry first: an unregistered certificate costs no cryptography at all.
    const registered = await this.deps.users.certificate(leaf!.thumbprint);
    if (!registered) throw ServiceError.of('UnknownCertificate');
    if (free) {
      const f = leaf!.facts;
      if (f.keyKind === 'rsa' && (f.rsaBits ?? 0) < MIN_RSA_BITS) {
        throw ServiceError.of(
          'CertNotValid',
          `the certificate is not valid: its RSA key has ${f.rsaBits ?? 'an unreadable number of'} bits; at least ${MIN_RSA_BITS} are required`,
        );
      }
    } else {
      const verdict = await this.deps.chains.validate(leaf!, rest, now);
      if (!verdict.valid) throw ServiceError.of('CertNotValid', `the certificate is not valid: ${verdict.reason}`);
    }
    const userBytes = uuidBytes(registered.userId);
    const rnd = Buffer.concat([userBytes, randomBytes(32)]);
    let encryptedKey: Buffer;
    try {
      encryptedKey = await envelopeFor(leaf!.cert, rnd);
    } catch (error) {
      if (error instanceof UnsupportedKey) throw ServiceError.of('CertNotValid', error.message);
      throw error;
    }
    await this.deps.rnds.put(
      registered.userId,
      rnd,
      leaf!.thumbprint,
      new Date(now.getTime() + this.opts.rndTtlSeconds * 1000),
      this.opts.rndTtlSeconds,
    );
    rnd.fill(0);
    return { encryptedKey, thumbprint: leaf!.thumbprint };
  }

  async approve(thumbprint: string, candidate: Buffer, onUser?: (userId: string) => void): Promise<SessionPair> {
    const registered = /^[0-9A-Fa-f]{40}$/.test(thumbprint) ? await this.deps.users.certificate(thumbprint) : null;
    if (!registered) throw ServiceError.of('UnknownCertificate');
    onUser?.(registered.userId);
    const approval = await this.deps.rnds.approve(registered.userId, candidate, registered._id, this.deps.clock());
    if (approval.outcome === 'missing') throw ServiceError.of('RndBytesNotFound');
    if (approval.outcome === 'wrong') throw ServiceError.of('WrongKey');
    try {
      const user = await this.deps.users.user(registered.userId);
      return await this.deps.sessions.create(registered.userId, user?.owners ?? [], registered._id);
    } catch (error) {
      // No session came of it (or its answer was lost): the rnd goes back, so the same approve can
      // be sent again (at worst a lost session is made twice, for the same proof of the key).
      await this.deps.rnds
        .restore(registered.userId, candidate, registered._id, approval.expiresAt!, this.deps.clock())
        .catch((restoreError: unknown) =>
          this.deps.logger.warn({ err: String(restoreError) }, 'could not put back the rnd of a failed approve'),
        );
      throw error;
    }
  }
}

function uuidBytes(userId: string): Buffer {
  const hex = userId.replace(/-/g, '');
  if (!/^[0-9a-fA-F]{32}$/.test(hex)) throw new Error(`user id ${userId} is not a UUID`);
  return Buffer.from(hex, 'hex');
}
