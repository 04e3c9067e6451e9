import { createHash } from 'node:crypto';
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
  /**
   * How long a verified token is answered from memory (0: never). Never past the token's own `exp`;
   * a key removed from the JWKS stops a token it signed within this time. Default 60 s.
   */
  cacheSeconds?: number;
  /** How many verified tokens are kept (the oldest go first). Default 10 000. */
  cacheEntries?: number;
  /** Milliseconds since the epoch (tests move it). */
  now?: () => number;
}

/** The token is not acceptable (401). Anything else `verify` throws means the keys could not be had (503). */
export class InvalidBearerToken extends Error {
  override readonly name = 'InvalidBearerToken';
  readonly code = 'CP_ERR_INVALID_BEARER_TOKEN';
}

/** Verifies OpenID Connect access tokens with jose: signature, iss, aud, exp, nbf, alg. */
export class BearerVerifier {
  private readonly keys: Parameters<typeof jwtVerify>[1];
  /**
   * Tokens that verified, by the SHA-256 of the token (never the token itself), with the principal
   * and until when the answer holds. An API client sends the same token with every request (with
   * every 1 MiB chunk); a signature check each time cost more than the rest of the authentication.
   * Only verified tokens enter, so a caller cannot fill it without tokens the issuer signed.
   */
  private readonly verified = new Map<string, { principal: Principal; until: number }>();

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
    const cacheMs = (this.options.cacheSeconds ?? 60) * 1000;
    if (cacheMs <= 0) return (await this.checked(token)).principal;
    const now = this.options.now?.() ?? Date.now();
    const key = createHash('sha256').update(token).digest('base64url');
    const hit = this.verified.get(key);
    if (hit && hit.until > now) return copyOf(hit.principal);
    this.verified.delete(key);
    const { principal, exp } = await this.checked(token);
    const until = Math.min(now + cacheMs, exp * 1000);
    if (until > now) {
      this.verified.set(key, { principal: copyOf(principal), until });
      const limit = this.options.cacheEntries ?? 10_000;
      while (this.verified.size > limit) this.verified.delete(this.verified.keys().next().value!);
    }
    return principal;
  }

  /** The full check, with the token's `exp` (seconds since the epoch). */
  private async checked(token: string): Promise<{ principal: Principal; exp: number }> {
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, this.keys, {
        issuer: this.options.issuer,
        audience: this.options.audience,
        algorithms: this.options.algorithms,
        clockTolerance: this.options.clockToleranceSeconds ?? 30,
        requiredClaims: ['exp'],
        ...(this.options.now ? { currentDate: new Date(this.options.now()) } : {}),
      }));
    } catch (error) {
      // The issuer's JWKS endpoint timing out or answering garbage says nothing about the token.
      if (error instanceof errors.JWKSTimeout || error instanceof errors.JWKSInvalid) throw error;
      if (error instanceof errors.JOSEError) throw new InvalidBearerToken(describe(error), { cause: error });
      throw error;
    }
    const claim = payload[this.options.ownersClaim];
    const owners =
      typeof claim === 'string'
        ? [claim]
        : Array.isArray(claim)
          ? claim.filter((o): o is string => typeof o === 'string')
          : [];
    // `sub` is not required (a client-credentials token may lack it); the subject is for logs only.
    const subject =
      payload.sub ??
      (typeof payload.client_id === 'string' ? payload.client_id : undefined) ??
      (typeof payload.azp === 'string' ? payload.azp : '');
    return { principal: { kind: 'bearer', subject, owners: owners.map((o) => o.toLowerCase()) }, exp: payload.exp! };
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

/** A caller's own copy of a cached principal (its fields are strings and one array of strings): cheaper than structuredClone on every request. */
function copyOf(principal: Principal): Principal {
  return { ...principal, owners: [...principal.owners] };
}
