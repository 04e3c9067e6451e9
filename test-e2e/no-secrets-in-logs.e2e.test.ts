// No credential reaches a log, at any level: a stack of its own logs at trace while sign-in,
// refresh and /v1 calls carry sids, refresh tokens, api keys and a Bearer token in every form the
// contract allows (query, header, cookie), and a webhook's secret signs its deliveries; then every
// service's log is searched for each of them.
import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { DevKeys, DevReceiptSigner } from '@cp/credentials';
import { call } from './support/http';
import { decryptEncryptedKey, TestPki, type Issued } from './support/pki';
import { ROOT } from './support/signin';
import { testStack } from './support/stack';
import { WebhookReceiver } from './support/webhookReceiver';

// eslint-disable-next-line @typescript-eslint/no-require-imports -- the plain-JS stack launcher
const { startStack } = require('../tools/devstack/stack') as {
  startStack: (opts: Record<string, unknown>) => Promise<
    {
      gatewayUrl: string;
      authDatabase: string;
      backing: Record<string, string>;
      keysDir: string;
      stop: () => Promise<void>;
      services: { logFile: string }[];
    } & Record<string, unknown>
  >;
};
const run = promisify(execFile);

describe('credentials in logs', () => {
  const logDir = mkdtempSync(join(tmpdir(), 'cp-logs-'));
  let stack: Awaited<ReturnType<typeof startStack>>;
  const secrets = new Map<string, string>(); // value -> what it is

  const admin = async (...args: string[]): Promise<string> =>
    (
      await run(process.execPath, [join(ROOT, 'services', 'auth-service', 'dist', 'admin', 'cli.js'), ...args], {
        env: { ...process.env, MONGODB_URL: stack.backing.MONGODB_URL, MONGODB_DATABASE: stack.authDatabase },
      })
    ).stdout;

  beforeAll(async () => {
    stack = await startStack({
      prefix: `logs${Date.now().toString(36)}`,
      logDir,
      keysDir: testStack().keysDir,
      env: { LOG_LEVEL: 'trace' },
    });
  });
  afterAll(async () => {
    await stack?.stop();
  });

  it('finds no sid, refresh token, api key, bearer token, internal secret or signing key in any service log', async () => {
    const gw = stack.gatewayUrl;
    const pki = new TestPki();
    const root = pki.root('Logs Root CA');
    const user: Issued = pki.issue('logs-user', root);
    await admin('trust', 'add', '--cert', root.certPath);
    const owner = randomUUID();
    await admin('user', 'add', '--user', randomUUID(), '--owner', owner, '--cert', user.certPath);
    const apiKey = (await admin('apikey', 'create', '--label', 'logs')).trim();
    secrets.set(apiKey, 'api key');
    const internal = stack.internalSecrets as Record<string, string>;
    expect(Object.keys(internal).length).toBeGreaterThanOrEqual(2);
    for (const [caller, value] of Object.entries(internal)) secrets.set(value, `internal secret ${caller}`);

    // Sign-in with the api key in the query, then in the header.
    const signIn = async (form: 'query' | 'header'): Promise<{ Sid: string; RefreshToken: string }> => {
      const q = form === 'query' ? `?apiKey=${encodeURIComponent(apiKey)}` : '';
      const headers: Record<string, string> = form === 'header' ? { 'x-kontur-apikey': apiKey } : {};
      const res = await call(`${gw}/auth/v5.13/authenticate-by-cert${q}`, { method: 'POST', body: user.pem, headers });
      expect(res.status).toBe(200);
      const { EncryptedKey, Link } = res.json() as { EncryptedKey: string; Link: { Href: string } };
      const rnd = decryptEncryptedKey(EncryptedKey, user);
      const approved = await call(`${Link.Href}${form === 'query' ? `&apiKey=${encodeURIComponent(apiKey)}` : ''}`, {
        method: 'POST',
        body: rnd,
        headers,
      });
      expect(approved.status).toBe(200);
      const pair = approved.json() as { Sid: string; RefreshToken: string };
      secrets.set(pair.Sid, `sid (${form} sign-in)`);
      secrets.set(pair.RefreshToken, `refresh token (${form} sign-in)`);
      return pair;
    };
    const a = await signIn('query');
    const b = await signIn('header');

    // /v1 with the sid as a header and as a cookie, and with a Bearer token; one refused call too.
    const token = await new DevKeys(stack.keysDir).mint({ owners: [owner] });
    secrets.set(token, 'bearer token');
    const created = await call(`${gw}/v1/${owner}/contents`, {
      method: 'POST',
      body: 'hello',
      headers: { authorization: `auth.sid ${a.Sid}` },
    });
    expect(created.status).toBe(201);
    const id = (created.json() as { id: string }).id;
    expect((await call(`${gw}/v1/${owner}/contents/${id}`, { headers: { cookie: `auth.sid=${b.Sid}` } })).status).toBe(
      200,
    );
    expect((await call(`${gw}/v1/${owner}/contents/${id}`, { token })).status).toBe(200);
    expect((await call(`${gw}/v1/${randomUUID()}/contents/${id}`, { token })).status).toBe(403);

    // A signed receipt: the stack's content-service read its signing key at start-up; no line of it is logged.
    expect((await call(`${gw}/v1/${owner}/contents/${id}/receipt`, { token })).status).toBe(200);
    const signingKey = readFileSync(new DevReceiptSigner(stack.keysDir).keyFile, 'utf8').split('\n');
    for (const line of signingKey.filter((l) => l && !l.startsWith('-----'))) secrets.set(line, 'receipt signing key');

    // Direct transfer (on in the local stack): a presigned part URL, and a download's 307 to S3.
    const open = await call(`${gw}/v1/${owner}/contents`, {
      method: 'POST',
      body: 'head',
      // Two parts: the first holds these bytes, the second is still free to go straight to S3.
      headers: { 'content-range': `bytes 0-3/${64 * 1024 * 1024 + 10}` },
      token,
    });
    expect(open.status).toBe(201);
    const parts = await call(`${gw}/v1/${owner}/contents/${(open.json() as { id: string }).id}/direct-parts`, {
      method: 'POST',
      body: JSON.stringify({ parts: [{ part: 2 }] }),
      headers: { 'content-type': 'application/json' },
      token,
    });
    expect(parts.status).toBe(200);
    const presigned = [(parts.json() as { parts: { url: string }[] }).parts[0]!.url];
    const redirected = await call(`${gw}/v1/${owner}/contents/${id}`, {
      headers: { prefer: 'redirect', range: 'bytes=0-1' },
      token,
      redirect: 'manual',
    });
    expect(redirected.status).toBe(307);
    presigned.push(redirected.headers.get('location')!);
    for (const url of presigned) {
      const signature = new URL(url).searchParams.get('X-Amz-Signature')!;
      expect(signature).toMatch(/^[0-9a-f]{64}$/);
      secrets.set(signature, 'presigned URL signature');
      secrets.set(new URL(url).search, 'presigned URL');
    }
    secrets.set(stack.backing.S3_SECRET_ACCESS_KEY!, 'S3 secret key');
    secrets.set('X-Amz-Signature', 'a presigned URL');
    secrets.set('X-Amz-Credential', 'a presigned URL');
    // A webhook: its secret is answered once, then signs a delivery; neither it nor a signature is logged.
    const receiver = new WebhookReceiver();
    const hookUrl = await receiver.start();
    try {
      const hook = await call(`${gw}/v1/${owner}/webhooks`, {
        method: 'POST',
        token,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ url: hookUrl, events: ['content.completed', 'content.deleted'] }),
      });
      expect(hook.status).toBe(201);
      secrets.set(hook.json().secret as string, 'webhook secret');
      const delivered = await call(`${gw}/v1/${owner}/contents`, { method: 'POST', body: 'hook me', token });
      expect(
        (await call(`${gw}/v1/${owner}/contents/${delivered.json().id}`, { method: 'DELETE', token })).status,
      ).toBe(204);
      await receiver.until(() => receiver.received.length >= 2);
      for (const d of receiver.received) secrets.set(String(d.headers['webhook-signature']), 'webhook signature');
    } finally {
      await receiver.stop();
    }

    // Refresh in the query form, then in the header form.
    const refreshed = async (res: Awaited<ReturnType<typeof call>>, form: string): Promise<void> => {
      expect(res.status).toBe(200);
      const pair = res.json() as { Sid: string; RefreshToken: string };
      secrets.set(pair.Sid, `sid (${form} refresh)`);
      secrets.set(pair.RefreshToken, `refresh token (${form} refresh)`);
    };
    const q = new URLSearchParams({ 'auth.sid': a.Sid, 'refresh-token': a.RefreshToken, 'api-key': apiKey });
    await refreshed(await call(`${gw}/sessions/v5.13/sessions/refresh?${q}`, { method: 'POST' }), 'query');
    await refreshed(
      await call(`${gw}/sessions/v5.13/sessions/refresh`, {
        method: 'POST',
        headers: { authorization: `auth.sid ${b.Sid}`, 'x-refresh-token': b.RefreshToken, 'x-kontur-apikey': apiKey },
      }),
      'header',
    );
    // A refused refresh (an unknown refresh token) logs a refusal: still no credential in it.
    const unknown = randomBytes(32).toString('base64url');
    secrets.set(unknown, 'unknown refresh token');
    const reuse = new URLSearchParams({ sid: a.Sid, 'refresh-token': unknown, apiKey });
    expect((await call(`${gw}/sessions/v5.13/sessions/refresh?${reuse}`, { method: 'POST' })).status).toBe(403);

    await new Promise((r) => setTimeout(r, 300)); // the services write their lines as they finish
    const logs = readdirSync(logDir).map((f) => ({ file: f, text: readFileSync(join(logDir, f), 'utf8') }));
    expect(logs.length).toBeGreaterThanOrEqual(4);
    // The access lines of the calls above are there, so the search looks at what was logged.
    expect(logs.some((l) => l.text.includes('/sessions/v5.13/sessions/refresh?auth.sid=[redacted]'))).toBe(true);
    expect(logs.some((l) => l.text.includes('authenticate-by-cert?apiKey=[redacted]'))).toBe(true);
    const hits = [];
    for (const [value, what] of secrets) {
      for (const l of logs) if (l.text.includes(value)) hits.push(`${what} in ${l.file}`);
    }
    console.log(
      `searched ${logs.length} logs (${logs.reduce((n, l) => n + l.text.length, 0)} bytes) for ${secrets.size} credentials: ${hits.length} hits`,
    );
    expect(hits).toEqual([]);
  });
});
