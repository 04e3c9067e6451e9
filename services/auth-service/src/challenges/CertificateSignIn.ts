import { randomBytes } from 'node:crypto';
import { ServiceError } from '@cp/errors';
import type { Logger } from '@cp/logging';
import { CertUnreadable, parseCertificates } from '../certificates/CertificateText';
import { validateChain } from '../certificates/ChainValidator';
import type { RndStore } from '../store/RndStore';
import type { SessionCreator, SessionPair } from '../store/SessionClient';
import type { TrustStore } from '../store/TrustStore';
import type { UserRegistry } from '../store/UserRegistry';
import type { Clock } from './Clock';
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
    private readonly deps: { users: UserRegistry; trust: TrustStore; rnds: RndStore; sessions: SessionCreator; clock: Clock; logger: Logger },
    private readonly opts: { rndTtlSeconds: number },
  ) {}

  async authenticate(body: Buffer, free: boolean): Promise<Challenge> {
    let certs;
    try {
      certs = parseCertificates(body);
    } catch (error) {
      if (error instanceof CertUnreadable) throw ServiceError.forbidden('CertUnreadable', 'the body is not a certificate (PEM, base64 or DER)');
      throw error;
    }
    const [leaf, ...rest] = certs;
    const now = this.deps.clock.now();
    if (!free) {
      let verdict = await validateChain(leaf!, rest, await this.deps.trust.anchors(), now);
      // The trust list is cached; a root or intermediate the operator just added must count at once.
      if (!verdict.valid) verdict = await validateChain(leaf!, rest, await this.deps.trust.anchors(0), now);
      if (!verdict.valid) throw new ServiceError(406, 'CertNotValid', `the certificate is not valid: ${verdict.reason}`);
    }
    const registered = await this.deps.users.certificate(leaf!.thumbprint);
    if (!registered) throw ServiceError.forbidden('UnknownCertificate', 'the certificate is not registered');
    const userBytes = uuidBytes(registered.userId);
    const rnd = Buffer.concat([userBytes, randomBytes(32)]);
    let encryptedKey: Buffer;
    try {
      encryptedKey = await envelopeFor(leaf!.cert, rnd);
    } catch (error) {
      if (error instanceof UnsupportedKey) throw new ServiceError(406, 'CertNotValid', error.message);
      throw error;
    }
    await this.deps.rnds.put(registered.userId, rnd, leaf!.thumbprint, new Date(now.getTime() + this.opts.rndTtlSeconds * 1000), this.opts.rndTtlSeconds);
    rnd.fill(0);
    return { encryptedKey, thumbprint: leaf!.thumbprint };
  }

  async approve(thumbprint: string, candidate: Buffer): Promise<SessionPair> {
    const registered = /^[0-9A-Fa-f]{40}$/.test(thumbprint) ? await this.deps.users.certificate(thumbprint) : null;
    if (!registered) throw ServiceError.forbidden('UnknownCertificate', 'the certificate is not registered');
    const outcome = await this.deps.rnds.approve(registered.userId, candidate, registered._id, this.deps.clock.now());
    if (outcome === 'missing') throw ServiceError.forbidden('RndBytesNotFound', 'no rnd is waiting for this certificate (none issued, used, or expired)');
    if (outcome === 'wrong') throw ServiceError.forbidden('WrongKey', 'the rnd does not match');
    const user = await this.deps.users.user(registered.userId);
    return this.deps.sessions.create(registered.userId, user?.owners ?? [], registered._id);
  }
}

function uuidBytes(userId: string): Buffer {
  const hex = userId.replace(/-/g, '');
  if (!/^[0-9a-fA-F]{32}$/.test(hex)) throw new Error(`user id ${userId} is not a UUID`);
  return Buffer.from(hex, 'hex');
}
