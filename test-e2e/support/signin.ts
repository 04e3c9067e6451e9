// Sign-in helpers: the admin command line (as an operator runs it) and the two calls of certificate sign-in.
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { call, type Answer } from './http';
import { decryptEncryptedKey, TestPki, type Issued } from './pki';
import { testStack } from './stack';

const run = promisify(execFile);
export const ROOT = join(__dirname, '..', '..');
const CLI = join(ROOT, 'services', 'auth-service', 'dist', 'admin', 'cli.js');

function adminEnv(): NodeJS.ProcessEnv {
  const stack = testStack();
  return {
    ...process.env,
    MONGODB_URL: stack.backing.MONGODB_URL,
    MONGODB_DATABASE: stack.authDatabase,
    AUDIT_LOG: stack.auditFile,
  };
}

/** `pnpm admin ...` against the test stack's auth database (node directly: pnpm adds ~1 s per call). */
export async function admin(...args: string[]): Promise<string> {
  const { stdout } = await run(process.execPath, [CLI, ...args], { env: adminEnv() });
  return stdout;
}

/** The same through the root script, as the README shows it. */
export async function pnpmAdmin(...args: string[]): Promise<string> {
  const { stdout } = await run('pnpm', ['--silent', 'admin', ...args], { env: adminEnv(), cwd: ROOT });
  return stdout;
}

/** `pnpm sessions ...` (the session-service's command line) against the test stack's session database and Redis. */
export async function sessionsAdmin(...args: string[]): Promise<string> {
  return sessionsAdminWith({}, ...args);
}

/** The sessions command line with some of its environment replaced (a Redis that does not answer). */
export async function sessionsAdminWith(overrides: Record<string, string>, ...args: string[]): Promise<string> {
  const { sessionEnv } = testStack();
  const env = {
    ...process.env,
    MONGODB_URL: sessionEnv.MONGODB_URL!,
    MONGODB_DATABASE: sessionEnv.MONGODB_DATABASE!,
    REDIS_URL: sessionEnv.REDIS_URL!,
    AUDIT_LOG: testStack().auditFile,
    ...overrides,
  };
  const { stdout } = await run(
    process.execPath,
    [join(ROOT, 'services', 'session-service', 'dist', 'admin', 'cli.js'), ...args],
    { env },
  );
  return stdout;
}

export async function newApiKey(opts: { allowFree?: boolean } = {}): Promise<string> {
  return (await admin('apikey', 'create', '--label', 'e2e', ...(opts.allowFree ? ['--allow-free'] : []))).trim();
}

export interface TestUser {
  userId: string;
  owners: string[];
}

export async function registerUser(
  cert: Issued | string,
  owners: string[] = [randomUUID()],
  userId = randomUUID(),
): Promise<TestUser> {
  await admin(
    'user',
    'add',
    '--user',
    userId,
    ...owners.flatMap((o) => ['--owner', o]),
    '--cert',
    typeof cert === 'string' ? cert : cert.certPath,
  );
  return { userId, owners };
}

export const authUrl = (path: string): string => `${testStack().gatewayUrl}/auth/v5.13/${path}`;
export const sessionsUrl = (path: string): string => `${testStack().gatewayUrl}/sessions/v5.13/${path}`;

export async function authenticate(
  body: Buffer | string | undefined,
  opts: { apiKey?: string; free?: string; query?: Record<string, string>; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const q = new URLSearchParams(opts.query ?? {});
  if (opts.apiKey !== undefined) q.set('apiKey', opts.apiKey);
  if (opts.free !== undefined) q.set('free', opts.free);
  const qs = q.toString();
  return call(authUrl(`authenticate-by-cert${qs ? `?${qs}` : ''}`), {
    method: 'POST',
    body: body === undefined ? undefined : Buffer.from(body),
    headers: opts.headers,
    signal: AbortSignal.timeout(30_000),
  });
}

/** The auth-service's own time for a request (its Server-Timing header), in milliseconds. */
export function serverMs(res: Answer): number {
  const m = /auth;dur=([\d.]+)/.exec(res.headers.get('server-timing') ?? '');
  if (!m) throw new Error('no Server-Timing from the auth-service');
  return Number(m[1]);
}

export async function approve(
  thumbprint: string | undefined,
  rnd: Buffer | undefined,
  apiKey: string | undefined,
): Promise<Answer> {
  const q = new URLSearchParams();
  if (thumbprint !== undefined) q.set('thumbprint', thumbprint);
  if (apiKey !== undefined) q.set('apiKey', apiKey);
  return call(authUrl(`approve-cert?${q}`), {
    method: 'POST',
    body: rnd,
    headers: { 'content-type': 'application/octet-stream' },
  });
}

/** Authenticate, decrypt with openssl, and return the rnd and the approve link. */
export async function challenge(
  user: Issued,
  apiKey: string,
  body: Buffer | string = user.pem,
  free?: string,
): Promise<{ rnd: Buffer; href: string }> {
  const res = await authenticate(body, { apiKey, free });
  if (res.status !== 200) throw new Error(`authenticate-by-cert answered ${res.status}: ${res.body.toString()}`);
  const { EncryptedKey, Link } = res.json() as { EncryptedKey: string; Link: { Rel: string; Href: string } };
  return { rnd: decryptEncryptedKey(EncryptedKey, user), href: Link.Href };
}

/** The whole sign-in: authenticate, decrypt, approve. */
export async function signIn(
  user: Issued,
  apiKey: string,
  body: Buffer | string = user.pem,
): Promise<{ Sid: string; RefreshToken: string }> {
  const { rnd, href } = await challenge(user, apiKey, body);
  const res = await call(`${href}&apiKey=${encodeURIComponent(apiKey)}`, { method: 'POST', body: rnd });
  if (res.status !== 200) throw new Error(`approve-cert answered ${res.status}: ${res.body.toString()}`);
  return res.json();
}

/**
 * A user signed in by certificate, end to end: a CA of its own trusted, a certificate issued and
 * registered for one new owner, an api key, and the session approve-cert gave.
 */
export async function signedInUser(name: string): Promise<{
  user: Issued;
  userId: string;
  owner: string;
  apiKey: string;
  pair: { Sid: string; RefreshToken: string };
}> {
  const pki = new TestPki();
  const root = pki.root(`${name} Root`);
  await admin('trust', 'add', '--cert', root.certPath);
  const user = pki.issue(`${name}-user`, root);
  const owner = randomUUID();
  const { userId } = await registerUser(user, [owner]);
  const apiKey = await newApiKey();
  return { user, userId, owner, apiKey, pair: await signIn(user, apiKey) };
}

export async function refresh(
  sid: string | undefined,
  refreshToken: string | undefined,
  apiKey: string | undefined,
): Promise<Answer> {
  const q = new URLSearchParams();
  if (sid !== undefined) q.set('auth.sid', sid);
  if (refreshToken !== undefined) q.set('refresh-token', refreshToken);
  if (apiKey !== undefined) q.set('api-key', apiKey);
  return call(sessionsUrl(`sessions/refresh?${q}`), { method: 'POST' });
}

/** A content request authorised by auth.sid. */
export function sidHeaders(sid: string, via: 'header' | 'cookie' = 'header'): Record<string, string> {
  return via === 'header' ? { authorization: `auth.sid ${sid}` } : { cookie: `theme=dark; auth.sid=${sid}` };
}
