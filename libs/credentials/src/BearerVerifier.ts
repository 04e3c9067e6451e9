import { readFileSync } from 'node:fs';
import { createLocalJWKSet, createRemoteJWKSet, errors, jwtVerify, type JWTPayload } from 'jose';
import type { Principal } from './Principal';

export interface BearerVerifierOptions {
  /** Remote JWKS (fetched and cached by jose), or */
  jwksUrl?: string;
  /** a local JWKS file (read once). */
  jwksFile?: string;
  issuer: string;
  audience: string;
  /** Accepted JWS algorithms; anything else is rejected before the signature is checked. */
  algorithms: string[];
  /** Claim holding the owner ids the token may act for (a string array, or one string). */
  ownersClaim: string;
  /** Allowed clock skew in seconds for exp/nbf. */
  clockToleranceSeconds?: number;
  /** How long a fetch of the remote JWKS may take (jose's default: 5 s). */
  jwksTimeoutMs?: number;
}

/** The token is not acceptable (401). Anything else `verify` throws means the keys could not be had (503). */
export class InvalidBearerToken extends Error {
  override readonly name = 'InvalidBearerToken';
}

/** Verifies OpenID Connect access tokens with jose: signature, iss, aud, exp, nbf, alg. */
export class BearerVerifier {
  private readonly keys: Parameters<typeof jwtVerify>[1];

  constructor(private readonly options: BearerVerifierOptions) {
    if (options.jwksUrl) {
      this.keys = createRemoteJWKSet(new URL(options.jwksUrl), {
        cooldownDuration: 30_000,
        cacheMaxAge: 600_000,
        timeoutDuration: options.jwksTimeoutMs ?? 5_000,
      });
    } else if (options.jwksFile) {
      this.keys = createLocalJWKSet(JSON.parse(readFileSync(options.jwksFile, 'utf8')));
    } else {
      throw new Error('BearerVerifier needs jwksUrl or jwksFile');
    }
  }

  async verify(token: string): Promise<Principal> {
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, this.keys, {
        issuer: this.options.issuer,
        audience: this.options.audience,
        algorithms: this.options.algorithms,
        clockTolerance: this.options.clockToleranceSeconds ?? 30,
        requiredClaims: ['exp'],
      }));
    } catch (error) {
      // The issuer's JWKS endpoint timing out or answering garbage says nothing about the token.
      if (error instanceof errors.JWKSTimeout || error instanceof errors.JWKSInvalid) throw error;
      if (error instanceof errors.JOSEError) throw new InvalidBearerToken(describe(error), { cause: error });
      throw error;
    }
    const claim = payload[this.options.ownersClaim];
    const owners = typeof claim === 'string' ? [claim] : Array.isArray(claim) ? claim.filter((o): o is string => typeof o === 'string') : [];
    // `sub` is not required (a client-credentials token may lack it); the subject is for logs only.
    const subject =
      payload.sub ?? (typeof payload.client_id === 'string' ? payload.client_id : undefined) ?? (typeof payload.azp === 'string' ? payload.azp : '');
    return { kind: 'bearer', subject, owners: owners.map((o) => o.toLowerCase()) };
  }
}

function describe(error: InstanceType<typeof errors.JOSEError>): string {
  if (error instanceof errors.JWTExpired) return 'the token has expired';
  if (error instanceof errors.JWTClaimValidationFailed) return `the token's ${error.claim} claim is not acceptable`;
  if (error instanceof errors.JWSSignatureVerificationFailed) return 'the token signature does not verify';
  if (error instanceof errors.JOSEAlgNotAllowed) return 'the token algorithm is not allowed';
  if (error instanceof errors.JWKSNoMatchingKey) return 'no trusted key matches the token';
  return 'the token is not a valid JWT';
}
