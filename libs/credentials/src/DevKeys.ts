import { mkdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, importJWK, SignJWT, type JWK } from 'jose';

export const DEV_ISSUER = 'content-platform-dev';
export const DEV_AUDIENCE = 'content-api';
const ALG = 'ES256';

/**
 * A local signing key for development tokens: a private JWK and the JWKS that a local stack is
 * configured (explicitly, by JWT_JWKS_FILE) to trust. Created on first use.
 */
export class DevKeys {
  constructor(private readonly dir: string) {}

  get jwksFile(): string {
    return join(this.dir, 'jwks.json');
  }

  private get privateFile(): string {
    return join(this.dir, 'private.jwk.json');
  }

  async ensure(): Promise<void> {
    if (existsSync(this.privateFile) && existsSync(this.jwksFile)) return;
    mkdirSync(this.dir, { recursive: true });
    const { privateKey, publicKey } = await generateKeyPair(ALG, { extractable: true });
    const kid = `dev-${Date.now().toString(36)}`;
    const priv = { ...(await exportJWK(privateKey)), kid, alg: ALG };
    const pub = { ...(await exportJWK(publicKey)), kid, alg: ALG, use: 'sig' };
    writeFileSync(this.privateFile, JSON.stringify(priv), { mode: 0o600 });
    writeFileSync(this.jwksFile, JSON.stringify({ keys: [pub] }));
  }

  /** Mints an access token for `owners`, valid for `ttlSeconds`. */
  async mint(opts: {
    owners: string[];
    subject?: string;
    ttlSeconds?: number;
    issuer?: string;
    audience?: string;
    notBefore?: number;
  }): Promise<string> {
    await this.ensure();
    const jwk = JSON.parse(readFileSync(this.privateFile, 'utf8')) as JWK;
    const key = await importJWK(jwk, ALG);
    const now = Math.floor(Date.now() / 1000);
    const jwt = new SignJWT({ owners: opts.owners })
      .setProtectedHeader({ alg: ALG, kid: jwk.kid })
      .setIssuer(opts.issuer ?? DEV_ISSUER)
      .setAudience(opts.audience ?? DEV_AUDIENCE)
      .setSubject(opts.subject ?? opts.owners[0] ?? 'dev')
      .setIssuedAt(now)
      .setExpirationTime(now + (opts.ttlSeconds ?? 3600));
    if (opts.notBefore !== undefined) jwt.setNotBefore(opts.notBefore);
    return jwt.sign(key);
  }
}
