// Refresh through the gateway: the header and mixed forms, the grace window for a lost answer,
// concurrent refreshes, the registration check against the registry the auth-service keeps
// (certificate or user removed, and refreshes while the auth-service is down: the session-service
// never calls it), and the maximum session lifetime. Short windows run on extra session-service
// replicas (with their own gateway) sharing the stack's database and Redis.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { MongoClient } from 'mongodb';
import { call, type Answer } from './support/http';
import { decryptEncryptedKey, TestPki, type Issued } from './support/pki';
import { freePort, startService, type ServiceHandle } from './support/replicas';
import { admin, newApiKey, registerUser, signIn, type TestUser } from './support/signin';
import { testStack } from './support/stack';

type Pair = { Sid: string; RefreshToken: string };

/** POST refresh at a gateway with the inputs in whatever forms the test chooses. */
function refreshAt(
  gatewayUrl: string,
  query: Record<string, string>,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const qs = new URLSearchParams(query).toString();
  return call(`${gatewayUrl}/sessions/v5.13/sessions/refresh${qs ? `?${qs}` : ''}`, { method: 'POST', headers });
}

/** Everything in headers, the form the client library is moving to. */
const headerForm = (gatewayUrl: string, pair: Pair, apiKey: string): Promise<Answer> =>
  refreshAt(
    gatewayUrl,
    {},
    { authorization: `auth.sid ${pair.Sid}`, 'x-refresh-token': pair.RefreshToken, 'x-kontur-apikey': apiKey },
  );

/** 404 (signed in; the content does not exist) while the sid is live, 401 once it is not. */
async function probe(owner: string, sid: string): Promise<number> {
  return (
    await call(`${testStack().gatewayUrl}/v1/${owner}/contents/${randomUUID()}`, {
      headers: { authorization: `auth.sid ${sid}` },
    })
  ).status;
}

async function withDb<T>(name: string, use: (db: ReturnType<MongoClient['db']>) => Promise<T>): Promise<T> {
  const mongo = await new MongoClient(testStack().backing.MONGODB_URL).connect();
  try {
    return await use(mongo.db(name));
  } finally {
    await mongo.close();
  }
}

describe('session refresh through the gateway', () => {
  const pki = new TestPki();
  let root: Issued;
  let apiKey: string;
  let gateway: string;

  async function newUser(name: string): Promise<{ cert: Issued; user: TestUser }> {
    const cert = pki.issue(`${name}-${randomUUID().slice(0, 8)}`, root);
    return { cert, user: await registerUser(cert) };
  }

  beforeAll(async () => {
    gateway = testStack().gatewayUrl;
    root = pki.root('Refresh Root CA');
    await admin('trust', 'add', '--cert', root.certPath);
    apiKey = await newApiKey();
  });

  describe('forms', () => {
    it('takes the sid as Authorization: auth.sid, the refresh token as X-Refresh-Token and the api key as X-Kontur-Apikey', async () => {
      const { cert, user } = await newUser('headers');
      const first = await signIn(cert, apiKey);
      const res = await headerForm(gateway, first, apiKey);
      expect(res.status).toBe(200);
      const second = res.json() as Pair;
      expect(second.Sid).not.toBe(first.Sid);
      expect(await probe(user.owners[0]!, first.Sid)).toBe(401);
      expect(await probe(user.owners[0]!, second.Sid)).toBe(404);
    });

    it('mixes the cookie, header and query forms', async () => {
      const { cert, user } = await newUser('mixed');
      let pair = await signIn(cert, apiKey);
      const forms: ((p: Pair) => Promise<Answer>)[] = [
        (p) =>
          refreshAt(
            gateway,
            { 'refresh-token': p.RefreshToken },
            { cookie: `theme=dark; auth.sid=${p.Sid}`, 'x-kontur-apikey': apiKey },
          ),
        (p) => refreshAt(gateway, { sid: p.Sid, 'api-key': apiKey }, { 'x-refresh-token': p.RefreshToken }),
        (p) => refreshAt(gateway, { 'auth.sid': p.Sid, apiKey }, { 'x-refresh-token': p.RefreshToken }),
        (p) =>
          refreshAt(
            gateway,
            { 'refresh-token': p.RefreshToken, 'api-key': apiKey },
            { authorization: `auth.sid ${p.Sid}` },
          ),
      ];
      for (const form of forms) {
        const res = await form(pair);
        expect(res.status).toBe(200);
        pair = res.json() as Pair;
      }
      expect(await probe(user.owners[0]!, pair.Sid)).toBe(404);
      const missing = await refreshAt(
        gateway,
        {},
        { authorization: `auth.sid ${pair.Sid}`, 'x-kontur-apikey': apiKey },
      );
      expect(missing.status).toBe(400);
      expect(missing.json()).toMatchObject({
        Code: 'MissingParameters',
        Message: expect.stringContaining('refresh-token'),
      });
    });
  });

  describe('a lost answer', () => {
    it('gets the identical pair back when the old pair is sent again within the grace window; the old sid stays dead', async () => {
      const { cert, user } = await newUser('retry');
      const first = await signIn(cert, apiKey);
      const lost = await headerForm(gateway, first, apiKey);
      expect(lost.status).toBe(200);
      const retried = await headerForm(gateway, first, apiKey);
      expect(retried.status).toBe(200);
      expect(retried.json()).toEqual(lost.json());
      const second = retried.json() as Pair;
      expect(await probe(user.owners[0]!, first.Sid)).toBe(401);
      expect(await probe(user.owners[0]!, second.Sid)).toBe(404);
      // The old refresh token with any other sid is a reuse, not a retry: the family goes.
      const other = await headerForm(gateway, { Sid: second.Sid, RefreshToken: first.RefreshToken }, apiKey);
      expect(other.status).toBe(403);
      expect(other.json().Code).toBe('RefreshTokenReused');
      expect(await probe(user.owners[0]!, second.Sid)).toBe(401);
    });

    it('gives concurrent refreshes with one pair the same new pair, and stores one', async () => {
      const { cert, user } = await newUser('concurrent');
      const first = await signIn(cert, apiKey);
      const answers = await Promise.all([
        headerForm(gateway, first, apiKey),
        headerForm(gateway, first, apiKey),
        headerForm(gateway, first, apiKey),
      ]);
      expect(answers.map((a) => a.status)).toEqual([200, 200, 200]);
      const [a, b, c] = answers.map((x) => x.json() as Pair);
      expect(b).toEqual(a);
      expect(c).toEqual(a);
      expect(await probe(user.owners[0]!, first.Sid)).toBe(401);
      expect(await probe(user.owners[0]!, a!.Sid)).toBe(404);
      await withDb(`${testStack().prefix}-sessions`, async (db) => {
        const family = await db.collection('session_families').findOne({ userId: user.userId });
        expect(family?.revokedAt).toBeNull();
        expect(await db.collection('session_pairs').countDocuments({ familyId: family!._id })).toBe(1);
      });
      expect((await headerForm(gateway, a!, apiKey)).status).toBe(200);
    });
  });

  describe('registration', () => {
    it('refuses with CertificateRemoved and revokes the sign-in once its certificate is removed; a sign-in with another certificate of the user still refreshes', async () => {
      const { cert: first, user } = await newUser('two-certs');
      const other = pki.issue(`two-certs-other-${randomUUID().slice(0, 8)}`, root);
      await registerUser(other, user.owners, user.userId);
      const signedWithFirst = await signIn(first, apiKey);
      const signedWithOther = await signIn(other, apiKey);
      expect(await admin('cert', 'remove', '--thumbprint', first.thumbprint)).toBe(
        `certificate ${first.thumbprint} removed\n`,
      );

      const refused = await headerForm(gateway, signedWithFirst, apiKey);
      expect(refused.status).toBe(403);
      expect(refused.json().Code).toBe('CertificateRemoved');
      expect(await probe(user.owners[0]!, signedWithFirst.Sid)).toBe(401);
      expect((await headerForm(gateway, signedWithFirst, apiKey)).json().Code).toBe('SessionRevoked');

      const kept = await headerForm(gateway, signedWithOther, apiKey);
      expect(kept.status).toBe(200);
      expect(await probe(user.owners[0]!, (kept.json() as Pair).Sid)).toBe(404);
    });

    it('refuses with UserRemoved once the user is gone from the registry', async () => {
      const { cert, user } = await newUser('gone');
      const pair = await signIn(cert, apiKey);
      // No admin command removes a user yet; an operator would delete the document.
      await withDb(testStack().authDatabase, (db) => db.collection('users').deleteOne({ _id: user.userId as never }));
      const res = await headerForm(gateway, pair, apiKey);
      expect(res.status).toBe(403);
      expect(res.json().Code).toBe('UserRemoved');
      expect(await probe(user.owners[0]!, pair.Sid)).toBe(401);
    });

    it('gives the new sid the owners registered for the user at the refresh', async () => {
      const { cert, user } = await newUser('owners');
      const pair = await signIn(cert, apiKey);
      const added = randomUUID();
      expect(await probe(added, pair.Sid)).toBe(403);
      await admin('user', 'add', '--user', user.userId, '--owner', added);
      const res = await headerForm(gateway, pair, apiKey);
      expect(res.status).toBe(200);
      expect(await probe(added, (res.json() as Pair).Sid)).toBe(404);
    });
  });

  describe('short windows, on extra replicas', () => {
    const started: ServiceHandle[] = [];
    let auth: ServiceHandle; // the only auth-service behind graceGateway; stopped and restarted below
    let authPort: number;
    let graceSession: ServiceHandle; // REFRESH_GRACE_SECONDS=1
    let graceGateway: string; // /auth to `auth`, /sessions to graceSession
    let shortGateway: string; // SESSION_MAX_LIFETIME_SECONDS=3

    async function start(name: string, env: Record<string, string>, port?: number): Promise<ServiceHandle> {
      // LOG_LEVEL info: every request is logged, which the last test reads.
      const handle = await startService(name, {
        env: { ...env, LOG_LEVEL: 'info' },
        logDir: join(testStack().logDir, 'refresh-windows'),
        port,
      });
      started.push(handle);
      return handle;
    }

    function startAuth(): Promise<ServiceHandle> {
      return start(
        'auth-service',
        { ...testStack().authEnv, SESSION_SERVICE_URL: graceSession.url, PUBLIC_BASE_URL: graceGateway },
        authPort,
      );
    }

    async function gatewayFor(sessionService: ServiceHandle, authUrl: string, port?: number): Promise<string> {
      const stack = testStack();
      const gw = await start(
        'gateway',
        {
          CONTENT_SERVICE_URL: stack.services['content-service']!.url,
          AUTH_SERVICE_URL: authUrl,
          SESSION_SERVICE_URL: sessionService.url,
        },
        port,
      );
      return gw.url;
    }

    /** The whole sign-in at one gateway: authenticate, decrypt, approve. */
    async function signInAt(gatewayUrl: string, cert: Issued): Promise<Answer> {
      const q = `apiKey=${encodeURIComponent(apiKey)}`;
      const res = await call(`${gatewayUrl}/auth/v5.13/authenticate-by-cert?${q}`, { method: 'POST', body: cert.pem });
      if (res.status !== 200) return res;
      const { EncryptedKey, Link } = res.json() as { EncryptedKey: string; Link: { Href: string } };
      expect(Link.Href.startsWith(gatewayUrl)).toBe(true);
      return call(`${Link.Href}&${q}`, { method: 'POST', body: decryptEncryptedKey(EncryptedKey, cert) });
    }

    beforeAll(async () => {
      const stack = testStack();
      authPort = await freePort();
      const gracePort = await freePort();
      graceSession = await start('session-service', { ...stack.sessionEnv, REFRESH_GRACE_SECONDS: '1' });
      graceGateway = await gatewayFor(graceSession, `http://127.0.0.1:${authPort}`, gracePort);
      auth = await startAuth();
      shortGateway = await gatewayFor(
        await start('session-service', { ...stack.sessionEnv, SESSION_MAX_LIFETIME_SECONDS: '3' }),
        stack.services['auth-service']!.url,
      );
    });

    afterAll(async () => {
      await Promise.all(started.map((s) => s.stop()));
    });

    it('revokes the family when the old pair comes back after the grace window', async () => {
      const { cert, user } = await newUser('late-retry');
      const first = await signIn(cert, apiKey);
      const res = await headerForm(graceGateway, first, apiKey);
      expect(res.status).toBe(200);
      const second = res.json() as Pair;
      await new Promise((r) => setTimeout(r, 1_500));
      const late = await headerForm(graceGateway, first, apiKey);
      expect(late.status).toBe(403);
      expect(late.json().Code).toBe('RefreshTokenReused');
      expect(await probe(user.owners[0]!, second.Sid)).toBe(401);
    });

    it('refreshes while the auth-service is down, and still ends the session of a certificate removed meanwhile', async () => {
      const { cert, user } = await newUser('auth-down');
      const signedIn = await signInAt(graceGateway, cert);
      expect(signedIn.status).toBe(200);
      const first = signedIn.json() as Pair;
      const { cert: other } = await newUser('auth-down-removed');
      const doomed = (await signInAt(graceGateway, other)).json() as Pair;
      await auth.stop();
      try {
        // The only auth-service behind this gateway is gone: sign-in cannot work...
        const signInDown = await call(`${graceGateway}/auth/v5.13/authenticate-by-cert?apiKey=${apiKey}`, {
          method: 'POST',
          body: cert.pem,
        });
        expect(signInDown.status).toBe(503);
        // ...and refresh does: the session-service reads the api key and the registration itself.
        const startedAt = performance.now();
        const down = await headerForm(graceGateway, first, apiKey);
        console.log(
          `refresh with the auth-service stopped: ${down.status} in ${(performance.now() - startedAt).toFixed(0)} ms`,
        );
        expect(down.status).toBe(200);
        const pair = down.json() as Pair;
        expect(await probe(user.owners[0]!, pair.Sid)).toBe(404);
        expect(await probe(user.owners[0]!, first.Sid)).toBe(401);
        expect((await headerForm(graceGateway, pair, '0'.repeat(64))).json().Code).toBe('InvalidApiKey');
        // A certificate removed while the auth-service is down counts at the next refresh.
        await admin('cert', 'remove', '--thumbprint', other.thumbprint);
        const removed = await headerForm(graceGateway, doomed, apiKey);
        expect(removed.status).toBe(403);
        expect(removed.json().Code).toBe('CertificateRemoved');
      } finally {
        auth = await startAuth();
      }
      // Sign-in is back once the auth-service is: a 503 (with Retry-After) is retried for 10 s at most.
      const restartedAt = performance.now();
      let back = await signInAt(graceGateway, cert);
      while (back.status === 503 && performance.now() - restartedAt < 10_000) {
        await new Promise((r) => setTimeout(r, 250));
        back = await signInAt(graceGateway, cert);
      }
      console.log(
        `sign-in after the auth-service's restart: ${back.status} ${(performance.now() - restartedAt).toFixed(0)} ms after it was ready`,
      );
      expect(back.status).toBe(200);
    });

    it('logs no sid, refresh token or api key, whichever form they came in', async () => {
      const { cert } = await newUser('logs');
      const first = await signIn(cert, apiKey);
      const res = await refreshAt(graceGateway, {
        'auth.sid': first.Sid,
        'refresh-token': first.RefreshToken,
        'api-key': apiKey,
      });
      expect(res.status).toBe(200);
      const second = res.json() as Pair;
      expect((await headerForm(graceGateway, second, apiKey)).status).toBe(200);
      await new Promise((r) => setTimeout(r, 300));
      const logs = started.map((s) => readFileSync(s.logFile, 'utf8')).join('\n');
      expect(logs).toContain('/sessions/v5.13/sessions/refresh?auth.sid=[redacted]');
      for (const secret of [first.Sid, first.RefreshToken, second.Sid, second.RefreshToken, apiKey])
        expect(logs).not.toContain(secret);
    });

    it('refuses a refresh past the maximum lifetime with SessionTooOld, and the sids it issued end with the sign-in', async () => {
      const { cert, user } = await newUser('too-old');
      const first = await signIn(cert, apiKey);
      const res = await headerForm(shortGateway, first, apiKey);
      expect(res.status).toBe(200);
      const second = res.json() as Pair;
      expect(await probe(user.owners[0]!, second.Sid)).toBe(404);
      const family = await withDb(`${testStack().prefix}-sessions`, (db) =>
        db.collection('session_families').findOne({ userId: user.userId }),
      );
      await new Promise((r) => setTimeout(r, Math.max(0, family!.createdAt.getTime() + 3_200 - Date.now())));
      expect(await probe(user.owners[0]!, second.Sid)).toBe(401);
      const late = await headerForm(shortGateway, second, apiKey);
      expect(late.status).toBe(403);
      expect(late.json()).toMatchObject({ Code: 'SessionTooOld', Message: expect.stringContaining('sign in again') });
    });
  });
});
