import { createHash } from 'node:crypto';
import { names, type CertChallenge, type SessionPairAnswer } from './api';
import { certificateDer, checkKeyPair, decryptEncryptedKey } from './EncryptedKey';
import type { RetryPolicy } from './RetryPolicy';
import type { Received, Sent, Transport } from './transport';
import { NotRefreshableError } from './errors';

/** How requests prove who sends them. */
export type Credentials =
  { kind: 'bearer'; token: string } | { kind: 'session'; sid: string; refreshToken?: string; apiKey?: string };

export interface SessionPair {
  sid: string;
  refreshToken: string;
}

export interface SessionOptions {
  /** Called after a sign-in or a refresh replaced the session, so callers can save the new pair. */
  onCredentials?: (credentials: Credentials) => void;
}

/**
 * The credentials requests go with, and what changes them: certificate sign-in and the rotation
 * of a session by its refresh token (one at a time, shared by concurrent callers).
 */
export class Session {
  private credentials: Credentials;
  /** The refresh under way: concurrent 401s share it (a second rotation with the same token would revoke the session). */
  private refreshing: Promise<SessionPair> | null = null;

  constructor(
    private readonly transport: Transport,
    private readonly base: URL,
    credentials: Credentials,
    private readonly options: SessionOptions,
    private readonly retries: RetryPolicy,
  ) {
    this.credentials = credentials;
  }

  get current(): Credentials {
    return this.credentials;
  }

  get isRefreshing(): boolean {
    return this.refreshing !== null;
  }

  /** Certificate sign-in: authenticate-by-cert, open the challenge with the key, approve-cert. */
  async signIn(opts: {
    certificatePem: string;
    privateKeyPem: string;
    apiKey: string;
    signal?: AbortSignal;
  }): Promise<SessionPair> {
    checkKeyPair(opts.certificatePem, opts.privateKeyPem);
    const challenge = await this.send({
      method: 'POST',
      url: this.url(`/auth/v5.13/authenticate-by-cert?apiKey=${encodeURIComponent(opts.apiKey)}`),
      headers: { 'content-type': 'application/x-pem-file' },
      body: () => Buffer.from(opts.certificatePem),
      contentLength: Buffer.byteLength(opts.certificatePem),
      signal: opts.signal,
    });
    const { EncryptedKey, Link } = JSON.parse(challenge.text) as CertChallenge;
    const rnd = await decryptEncryptedKey(EncryptedKey, opts.certificatePem, opts.privateKeyPem);
    const thumbprint =
      new URL(Link.Href).searchParams.get(names.thumbprint) ??
      createHash('sha1').update(certificateDer(opts.certificatePem)).digest('hex').toUpperCase();
    const approved = await this.send({
      method: 'POST',
      url: this.url(
        `/auth/v5.13/approve-cert?${names.thumbprint}=${thumbprint}&apiKey=${encodeURIComponent(opts.apiKey)}`,
      ),
      headers: { 'content-type': 'application/octet-stream' },
      body: () => rnd,
      contentLength: rnd.length,
      signal: opts.signal,
    });
    const pair = JSON.parse(approved.text) as SessionPairAnswer;
    this.credentials = { kind: 'session', sid: pair.Sid, refreshToken: pair.RefreshToken, apiKey: opts.apiKey };
    this.options.onCredentials?.(this.credentials);
    return { sid: pair.Sid, refreshToken: pair.RefreshToken };
  }

  /** Rotates the session; the old pair stops working. Concurrent callers share one rotation. */
  refresh(signal?: AbortSignal): Promise<SessionPair> {
    this.refreshing ??= this.rotate(signal).finally(() => {
      this.refreshing = null;
    });
    return this.refreshing;
  }

  private async rotate(signal?: AbortSignal): Promise<SessionPair> {
    const c = this.credentials;
    if (c.kind !== 'session' || !c.refreshToken || !c.apiKey)
      throw new NotRefreshableError(
        c.kind === 'bearer'
          ? 'a Bearer token cannot be refreshed by this client; its issuer gives new ones'
          : 'refreshing needs a session with a refresh token and an api key',
      );
    // In headers, not the query string: query strings end up in access logs and proxies' histories.
    const res = await this.send({
      method: 'POST',
      url: this.url('/sessions/v5.13/sessions/refresh'),
      headers: { authorization: `auth.sid ${c.sid}`, [names.refreshToken]: c.refreshToken, [names.apiKey]: c.apiKey },
      contentLength: 0,
      signal,
    });
    const pair = JSON.parse(res.text) as SessionPairAnswer;
    this.credentials = { kind: 'session', sid: pair.Sid, refreshToken: pair.RefreshToken, apiKey: c.apiKey };
    this.options.onCredentials?.(this.credentials);
    return { sid: pair.Sid, refreshToken: pair.RefreshToken };
  }

  canRefresh(): boolean {
    const c = this.credentials;
    return c.kind === 'session' && !!c.refreshToken && !!c.apiKey;
  }

  authorization(): string {
    const c = this.credentials;
    return c.kind === 'bearer' ? `Bearer ${c.token}` : `auth.sid ${c.sid}`;
  }

  /**
   * Sign-in and refresh calls are retried like any other: when the answer of an approve or a
   * refresh was lost, its rnd or refresh token is spent whether or not the call is sent again.
   */
  private send(req: Sent): Promise<Received> {
    return this.retries.run({ method: req.method, path: req.url.pathname, signal: req.signal }, () =>
      this.transport.send(req),
    );
  }

  private url(path: string): URL {
    return new URL(path, this.base);
  }
}
