// Every status and Code of sign-in and refresh that a client can provoke, through the gateway.
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { MongoClient } from 'mongodb';
import { join } from 'node:path';
import { call, contentsUrl } from './support/http';
import { decryptEncryptedKey, TestPki, type Issued } from './support/pki';
import {
  admin,
  approve,
  authenticate,
  challenge,
  newApiKey,
  refresh,
  registerUser,
  sessionsAdmin,
  sessionsAdminWith,
  sidHeaders,
  signIn,
} from './support/signin';
import { contentReplicaEnv, freePort, startService } from './support/replicas';
import { testStack } from './support/stack';

const DAY = 24 * 3600 * 1000;

describe('certificate sign-in refusals', () => {
  const pki = new TestPki();
  let root: Issued;
  let intermediate: Issued;
  let user: Issued;
  let apiKey: string;
  let freeKey: string; // created with --allow-free
  const chain = (c: Issued) => c.pem + intermediate.pem;

  beforeAll(async () => {
    root = pki.root('Errors Root CA');
    intermediate = pki.issue('Errors Intermediate CA', root, { ca: true });
    user = pki.issue('errors-user', intermediate);
    await admin('trust', 'add', '--cert', root.certPath);
    apiKey = await newApiKey();
    freeKey = await newApiKey({ allowFree: true });
    await registerUser(user);
  });

  describe('authenticate-by-cert', () => {
    it('answers 400 MissingParameters without a body or without an api key', async () => {
      for (const res of [await authenticate(undefined, { apiKey }), await authenticate(chain(user), {})]) {
        expect(res.status).toBe(400);
        expect(res.json().Code).toBe('MissingParameters');
      }
    });

    it('answers 403 InvalidApiKey for an unknown api key', async () => {
      const res = await authenticate(chain(user), { apiKey: '6f0d4c8e-0000-4000-8000-000000000000' });
      expect(res.status).toBe(403);
      expect(res.json()).toEqual({ Code: 'InvalidApiKey', Message: expect.any(String) });
    });

    it.each([
      ['text', Buffer.from('hello, this is not a certificate')],
      ['random DER-looking bytes', Buffer.concat([Buffer.from([0x30, 0x82, 0x01, 0x00]), randomBytes(256)])],
      ['a PEM block of junk', Buffer.from('-----BEGIN CERTIFICATE-----\nAAAABBBBCCCC\n-----END CERTIFICATE-----\n')],
      [
        'a private key',
        Buffer.from(
          '-----BEGIN PRIVATE KEY-----\nMIIBVQIBADANBgkqhkiG9w0BAQEFAASCAT8wggE7AgEAAkEA\n-----END PRIVATE KEY-----\n',
        ),
      ],
    ])('answers 403 CertUnreadable for %s', async (_name, body) => {
      const res = await authenticate(body, { apiKey });
      expect(res.status).toBe(403);
      expect(res.json().Code).toBe('CertUnreadable');
    });

    it('answers 403 UnknownCertificate for a valid certificate nobody registered', async () => {
      const stranger = pki.issue('stranger', intermediate);
      const res = await authenticate(chain(stranger), { apiKey });
      expect(res.status).toBe(403);
      expect(res.json().Code).toBe('UnknownCertificate');
    });

    describe('answers 406 CertNotValid for registered certificates whose chain fails', () => {
      const cases: [string, () => { cert: Issued; body: string }][] = [
        [
          'expired',
          () => ({
            cert: pki.issue('expired', intermediate, {
              notBefore: new Date(Date.now() - 400 * DAY),
              notAfter: new Date(Date.now() - DAY),
            }),
            body: '',
          }),
        ],
        [
          'not yet valid',
          () => ({
            cert: pki.issue('future', intermediate, {
              notBefore: new Date(Date.now() + DAY),
              notAfter: new Date(Date.now() + 400 * DAY),
            }),
            body: '',
          }),
        ],
        ['issued by an untrusted CA', () => ({ cert: pki.issue('wrong-issuer', pki.root('Untrusted CA')), body: '' })],
        ['self-signed', () => ({ cert: pki.root('self-signed-user'), body: '' })],
        ['missing its intermediate', () => ({ cert: pki.issue('orphan', intermediate), body: 'leaf-only' })],
      ];
      it.each(cases)('%s', async (_name, make) => {
        const { cert, body } = make();
        await registerUser(cert);
        const sent = body === 'leaf-only' ? cert.pem : chain(cert);
        const res = await authenticate(sent, { apiKey });
        expect(res.status).toBe(406);
        expect(res.json().Code).toBe('CertNotValid');
        // free=true skips the chain check (case-insensitive) for a key allowed to; the rnd still opens with openssl.
        for (const free of ['true', 'TRUE', 'True']) {
          const refused = await authenticate(cert.pem, { apiKey, free });
          expect(refused.status).toBe(403);
          expect(refused.json().Code).toBe('FreeNotAllowed');
          const loose = await authenticate(cert.pem, { apiKey: freeKey, free });
          expect(loose.status).toBe(200);
          expect(decryptEncryptedKey(loose.json().EncryptedKey, cert).length).toBe(48);
        }
        expect((await authenticate(sent, { apiKey: freeKey, free: 'False' })).status).toBe(406);
      });
    });

    it('answers 406 CertNotValid when an intermediate is not a CA', async () => {
      const notCa = pki.issue('not-a-ca', intermediate); // a user certificate
      const victim = pki.issue('signed-by-user', notCa);
      await registerUser(victim);
      const res = await authenticate(victim.pem + notCa.pem + intermediate.pem, { apiKey });
      expect(res.status).toBe(406);
    });
  });

  describe('approve-cert', () => {
    it('answers 400 MissingParameters without a thumbprint or an api key', async () => {
      const { rnd } = await challenge(user, apiKey, chain(user));
      for (const res of [await approve(undefined, rnd, apiKey), await approve(user.thumbprint, rnd, undefined)]) {
        expect(res.status).toBe(400);
        expect(res.json().Code).toBe('MissingParameters');
      }
      expect((await approve(user.thumbprint, rnd, 'not-a-key')).json().Code).toBe('InvalidApiKey');
    });

    it('answers 403 UnknownCertificate for a thumbprint nobody registered', async () => {
      const res = await approve('0123456789ABCDEF0123456789ABCDEF01234567', randomBytes(48), apiKey);
      expect(res.status).toBe(403);
      expect(res.json().Code).toBe('UnknownCertificate');
    });

    it('answers 403 RndBytesNotFound when no rnd was issued', async () => {
      const idle = pki.issue('idle', intermediate);
      await registerUser(idle);
      const res = await approve(idle.thumbprint, randomBytes(48), apiKey);
      expect(res.status).toBe(403);
      expect(res.json().Code).toBe('RndBytesNotFound');
    });

    it('answers 403 WrongKey for a wrong rnd, and drops the rnd after 5 wrong tries', async () => {
      const { rnd } = await challenge(user, apiKey, chain(user));
      const wrong = Buffer.from(rnd);
      wrong[47] ^= 1;
      for (let i = 0; i < 4; i++) expect((await approve(user.thumbprint, wrong, apiKey)).json().Code).toBe('WrongKey');
      expect((await approve(user.thumbprint, Buffer.alloc(0), apiKey)).json().Code).toBe('WrongKey');
      const late = await approve(user.thumbprint, rnd, apiKey);
      expect(late.status).toBe(403);
      expect(late.json().Code).toBe('RndBytesNotFound');
    });

    it('accepts an rnd after fewer than 5 wrong tries', async () => {
      const { rnd } = await challenge(user, apiKey, chain(user));
      for (let i = 0; i < 4; i++)
        expect((await approve(user.thumbprint, randomBytes(48), apiKey)).json().Code).toBe('WrongKey');
      expect((await approve(user.thumbprint, rnd, apiKey)).status).toBe(200);
    });

    it('refuses a replayed approve with RndBytesNotFound', async () => {
      const { rnd } = await challenge(user, apiKey, chain(user));
      expect((await approve(user.thumbprint, rnd, apiKey)).status).toBe(200);
      const replay = await approve(user.thumbprint, rnd, apiKey);
      expect(replay.status).toBe(403);
      expect(replay.json().Code).toBe('RndBytesNotFound');
    });

    it('keeps one rnd per user: a second authenticate replaces the first', async () => {
      const first = await challenge(user, apiKey, chain(user));
      const second = await challenge(user, apiKey, chain(user));
      expect(first.rnd.equals(second.rnd)).toBe(false);
      expect((await approve(user.thumbprint, first.rnd, apiKey)).json().Code).toBe('WrongKey');
      expect((await approve(user.thumbprint, second.rnd, apiKey)).status).toBe(200);
    });
  });

  describe('sessions/refresh', () => {
    it('answers 400 MissingParameters for each missing parameter', async () => {
      const pair = await signIn(user, apiKey, chain(user));
      for (const res of [
        await refresh(undefined, pair.RefreshToken, apiKey),
        await refresh(pair.Sid, undefined, apiKey),
        await refresh(pair.Sid, pair.RefreshToken, undefined),
      ]) {
        expect(res.status).toBe(400);
        expect(res.json().Code).toBe('MissingParameters');
      }
    });

    it('answers 403 for an unknown api key, an unknown refresh token, or a sid of another session', async () => {
      const a = await signIn(user, apiKey, chain(user));
      const b = await signIn(user, apiKey, chain(user));
      expect((await refresh(a.Sid, a.RefreshToken, 'nope')).json().Code).toBe('InvalidApiKey');
      expect((await refresh(a.Sid, randomBytes(32).toString('hex').toUpperCase(), apiKey)).json().Code).toBe(
        'InvalidRefreshToken',
      );
      expect((await refresh(a.Sid, 'garbage', apiKey)).status).toBe(403);
      const mismatch = await refresh(b.Sid, a.RefreshToken, apiKey);
      expect(mismatch.status).toBe(403);
      expect(mismatch.json().Code).toBe('SidMismatch');
      // Neither session was harmed by the refused attempts.
      expect((await refresh(a.Sid, a.RefreshToken, apiKey)).status).toBe(200);
      expect((await refresh(b.Sid, b.RefreshToken, apiKey)).status).toBe(200);
    });

    it('rotates exactly once under concurrent refreshes with one token: all get the same pair, and nothing is revoked', async () => {
      const pair = await signIn(user, apiKey, chain(user));
      const answers = await Promise.all(Array.from({ length: 8 }, () => refresh(pair.Sid, pair.RefreshToken, apiKey)));
      expect(answers.map((a) => a.status)).toEqual(Array(8).fill(200));
      const next = answers[0]!.json() as { Sid: string; RefreshToken: string };
      for (const a of answers) expect(a.json()).toEqual(next);

      // In the database: one rotation claim, one successor pair, the family alive.
      const mongo = new MongoClient(testStack().backing.MONGODB_URL);
      try {
        const db = mongo.db(`${testStack().prefix}-sessions`);
        const refreshHash = createHash('sha256').update(Buffer.from(pair.RefreshToken, 'hex')).digest('hex');
        const rotation = await db.collection('session_rotations').findOne({ _id: refreshHash as never });
        expect(rotation).not.toBeNull();
        const pairs = await db.collection('session_pairs').find({ familyId: rotation!.familyId }).toArray();
        expect(pairs).toHaveLength(1);
        const family = await db.collection('session_families').findOne({ _id: rotation!.familyId });
        expect(family!.revokedAt).toBeNull();
      } finally {
        await mongo.close();
      }
      expect((await refresh(next.Sid, next.RefreshToken, apiKey)).status).toBe(200);
      // The first token after its successor was used: a reuse, the family is revoked.
      expect((await refresh(pair.Sid, pair.RefreshToken, apiKey)).json().Code).toBe('RefreshTokenReused');
    });
  });

  describe('operators take access away with the admin command line', () => {
    it('a revoked api key signs nobody in; revoking an unknown key exits 3', async () => {
      const key = await newApiKey();
      expect(await admin('apikey', 'revoke', '--key', key)).toBe('api key revoked\n');
      const res = await authenticate(chain(user), { apiKey: key });
      expect(res.status).toBe(403);
      expect(res.json().Code).toBe('InvalidApiKey');
      await expect(admin('apikey', 'revoke', '--key', key)).rejects.toMatchObject({ code: 3 });
    });

    it('a removed certificate no longer signs in', async () => {
      const leaving = pki.issue('leaving-user', intermediate);
      await registerUser(leaving);
      expect((await authenticate(chain(leaving), { apiKey })).status).toBe(200);
      // as `user show` prints it, colons and lower case included
      const shown = leaving.thumbprint.toLowerCase().match(/../g)!.join(':');
      expect(await admin('cert', 'remove', '--thumbprint', shown)).toBe(`certificate ${leaving.thumbprint} removed\n`);
      const res = await authenticate(chain(leaving), { apiKey });
      expect(res.status).toBe(403);
      expect(res.json().Code).toBe('UnknownCertificate');
      await expect(admin('cert', 'remove', '--thumbprint', leaving.thumbprint)).rejects.toMatchObject({ code: 3 });
      await expect(admin('cert', 'remove', '--thumbprint', 'not-a-thumbprint')).rejects.toMatchObject({ code: 2 });
    });

    it("revoking a user's sessions stops every sid and refresh token of theirs at once", async () => {
      const person = pki.issue('revoked-sessions-user', intermediate);
      const { userId, owners } = await registerUser(person);
      const pairs = [await signIn(person, apiKey, chain(person)), await signIn(person, apiKey, chain(person))];
      const probe = (sid: string) => call(contentsUrl(owners[0]!, randomUUID()), { headers: sidHeaders(sid) });
      for (const p of pairs) expect((await probe(p.Sid)).status).toBe(404); // signed in; the content does not exist
      expect(await sessionsAdmin('revoke', '--user', userId)).toBe(`revoked 2 sessions of user ${userId}\n`);
      for (const p of pairs) {
        expect((await probe(p.Sid)).status).toBe(401);
        const res = await refresh(p.Sid, p.RefreshToken, apiKey);
        expect(res.status).toBe(403);
        expect(res.json().Code).toBe('SessionRevoked');
      }
      expect(await sessionsAdmin('revoke', '--user', userId)).toBe(`revoked 0 sessions of user ${userId}\n`);
      await expect(sessionsAdmin('revoke', '--user', 'nobody')).rejects.toMatchObject({ code: 2 });
    });

    it('revokes nothing while Redis does not answer, and says so', async () => {
      const person = pki.issue('revoke-without-redis-user', intermediate);
      const { userId, owners } = await registerUser(person);
      const { Sid } = await signIn(person, apiKey, chain(person));
      const probe = () => call(contentsUrl(owners[0]!, randomUUID()), { headers: sidHeaders(Sid) });
      expect((await probe()).status).toBe(404);
      const noRedis = { REDIS_URL: `redis://127.0.0.1:${await freePort()}` };
      await expect(sessionsAdminWith(noRedis, 'revoke', '--user', userId)).rejects.toMatchObject({ code: 1 });
      expect((await probe()).status).toBe(404); // still signed in: the cache holds it, so no revocation without Redis
      expect(await sessionsAdmin('revoke', '--user', userId)).toBe(`revoked 1 session of user ${userId}\n`);
      expect((await probe()).status).toBe(401);
    });

    it('a content-service answers a live sid from the sessions cache and sees its revocation at once, with the session-service out of reach', async () => {
      const person = pki.issue('cached-sessions-user', intermediate);
      const { userId, owners } = await registerUser(person);
      const { Sid } = await signIn(person, apiKey, chain(person));
      expect((await call(contentsUrl(owners[0]!, randomUUID()), { headers: sidHeaders(Sid) })).status).toBe(404); // validated once: now cached
      // A replica whose session-service does not answer: only the Redis cache can vouch for a sid.
      const deadSessionService = `http://127.0.0.1:${await freePort()}`;
      const replica = await startService('content-service', {
        env: contentReplicaEnv({
          SESSION_SERVICE_URL: deadSessionService,
          SESSION_SERVICE_INTERNAL_SECRET: 'x'.repeat(24),
          REDIS_URL: testStack().backing.REDIS_URL,
        }),
        logDir: join(testStack().logDir, 'cached-sessions'),
      });
      try {
        const probe = (sid: string) =>
          call(`${replica.url}/v1/${owners[0]}/contents/${randomUUID()}`, { headers: sidHeaders(sid) });
        expect((await probe(Sid)).status).toBe(404);
        const unknown = await probe(randomBytes(32).toString('hex').toUpperCase()); // not cached: the session-service would have to answer
        expect(unknown.status).toBe(503);
        expect(unknown.json().id).toBe('urn:error:contents:sessionServiceUnavailable');
        await sessionsAdmin('revoke', '--user', userId);
        const revoked = await probe(Sid);
        expect(revoked.status).toBe(401);
        expect(revoked.json().id).toBe('urn:error:contents:invalidSession');
      } finally {
        await replica.stop('SIGTERM');
      }
    });

    it('a removed CA leaves the trust list', async () => {
      const other = pki.root('Retired Root CA');
      await admin('trust', 'add', '--cert', other.certPath);
      expect(await admin('trust', 'list')).toContain(other.thumbprint);
      expect(await admin('trust', 'remove', '--thumbprint', other.thumbprint)).toBe(
        `trusted certificate ${other.thumbprint} removed\n`,
      );
      expect(await admin('trust', 'list')).not.toContain(other.thumbprint);
      await expect(admin('trust', 'remove', '--thumbprint', other.thumbprint)).rejects.toMatchObject({ code: 3 });
    });
  });

  it('never routes the internal endpoints through the gateway', async () => {
    const { gatewayUrl } = testStack();
    for (const path of [
      '/internal/sessions/validate',
      '/sessions/v5.13/internal/sessions',
      '/auth/v5.13/internal/api-keys/verify',
    ]) {
      const res = await call(`${gatewayUrl}${path}`, {
        method: 'POST',
        body: '{}',
        headers: { 'content-type': 'application/json' },
      });
      expect(res.status).toBe(404);
    }
  });

  it('refuses the internal endpoints without a caller secret', async () => {
    const { services } = testStack();
    const res = await call(`${services['session-service']!.url}/internal/sessions`, {
      method: 'POST',
      body: JSON.stringify({ userId: 'x', owners: [] }),
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(401);
  });

  it('has no internal endpoint at the auth-service: no service calls it, whatever secret it sends', async () => {
    const { services, internalSecrets } = testStack();
    for (const path of ['/internal/api-keys/verify', '/internal/registrations/check']) {
      for (const secret of [undefined, internalSecrets.authToSession, internalSecrets.contentToSession]) {
        const res = await call(`${services['auth-service']!.url}${path}`, {
          method: 'POST',
          body: JSON.stringify({ apiKey, userId: randomUUID() }),
          headers: { 'content-type': 'application/json', ...(secret ? { 'x-internal-secret': secret } : {}) },
        });
        expect(res.status).toBe(404);
      }
    }
  });

  describe('each caller reaches only the internal routes granted to its own secret', () => {
    const post = (url: string, secret: string, body: unknown) =>
      call(url, {
        method: 'POST',
        body: JSON.stringify(body),
        headers: { 'content-type': 'application/json', 'x-internal-secret': secret },
      });
    const sessionUrl = () => testStack().services['session-service']!.url;
    const secrets = () => testStack().internalSecrets;
    const unknownSid = () => randomBytes(32).toString('hex').toUpperCase();

    it("the content-service's secret validates sids but cannot create a session (403 InternalRouteForbidden)", async () => {
      const create = await post(`${sessionUrl()}/internal/sessions`, secrets().contentToSession, {
        userId: randomUUID(),
        owners: [randomUUID()],
      });
      expect(create.status).toBe(403);
      expect(create.json()).toEqual({
        Code: 'InternalRouteForbidden',
        Message: expect.stringContaining('content-service'),
      });
      for (const path of ['/internal/Sessions', '/internal/sessions/', '/internal//sessions']) {
        expect(
          (await post(`${sessionUrl()}${path}`, secrets().contentToSession, { userId: randomUUID(), owners: [] }))
            .status,
        ).toBe(403);
      }
      const validate = await post(`${sessionUrl()}/internal/sessions/validate`, secrets().contentToSession, {
        sid: unknownSid(),
      });
      expect(validate.status).toBe(404); // let through: the sid is unknown
      expect(validate.json().Code).toBe('SessionNotFound');
    });

    it("the auth-service's secret creates sessions and validates them", async () => {
      const created = await post(`${sessionUrl()}/internal/sessions`, secrets().authToSession, {
        userId: randomUUID(),
        owners: [randomUUID()],
      });
      expect(created.status).toBe(201);
      const { Sid } = created.json() as { Sid: string };
      expect(
        (await post(`${sessionUrl()}/internal/sessions/validate`, secrets().authToSession, { sid: Sid })).status,
      ).toBe(200);
      expect(
        (await post(`${sessionUrl()}/internal/sessions/validate`, secrets().contentToSession, { sid: Sid })).status,
      ).toBe(200);
    });

    it('a secret no caller holds opens nothing (401)', async () => {
      expect(
        (await post(`${sessionUrl()}/internal/sessions/validate`, 'n'.repeat(32), { sid: unknownSid() })).status,
      ).toBe(401);
    });
  });
});
