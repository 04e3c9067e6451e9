// The certificate sign-in and the sessions, through the gateway, with
// openssl as the client: certificates made by openssl, EncryptedKey opened by `openssl cms`.
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { call, contentsUrl } from './support/http';
import { decryptEncryptedKey, TestPki, type Issued } from './support/pki';
import {
  admin,
  approve,
  authenticate,
  challenge,
  newApiKey,
  pnpmAdmin,
  refresh,
  registerUser,
  sidHeaders,
  signIn,
  type TestUser,
} from './support/signin';
import { testStack } from './support/stack';

const HEX64 = /^[0-9A-F]{64}$/;

describe('certificate sign-in through the gateway', () => {
  const pki = new TestPki();
  let root: Issued;
  let bodyIntermediate: Issued; // known only from the request body
  let knownIntermediate: Issued; // registered with `admin trust add`
  let alice: Issued;
  let bob: Issued;
  let apiKey: string;
  let aliceUser: TestUser;

  beforeAll(async () => {
    root = pki.root('Sign-in Root CA');
    bodyIntermediate = pki.issue('Body Intermediate CA', root, { ca: true });
    knownIntermediate = pki.issue('Known Intermediate CA', root, { ca: true });
    alice = pki.issue('alice', bodyIntermediate);
    bob = pki.issue('bob', knownIntermediate);
    await admin('trust', 'add', '--cert', root.certPath);
    await admin('trust', 'add', '--cert', knownIntermediate.certPath);
    apiKey = await newApiKey();
    aliceUser = await registerUser(alice, [randomUUID(), randomUUID()]);
    await registerUser(bob);
  });

  it('signs in, uses the sid for contents, refreshes, and revokes the family when an old refresh token comes back', async () => {
    const chain = pki.chainFile(alice, bodyIntermediate);
    const res = await authenticate(readFileSync(chain), { apiKey });
    expect(res.status).toBe(200);
    const { EncryptedKey, Link } = res.json();
    expect(Link).toEqual({
      Rel: 'approve-cert',
      Href: `${testStack().gatewayUrl}/auth/v5.13/approve-cert?thumbprint=${alice.thumbprint}`,
    });

    const rnd = decryptEncryptedKey(EncryptedKey, alice);
    expect(rnd.length).toBe(48);
    expect(rnd.subarray(0, 16).toString('hex')).toBe(aliceUser.userId.replace(/-/g, ''));

    const approved = await call(`${Link.Href}&apiKey=${apiKey}`, {
      method: 'POST',
      body: rnd,
      headers: { 'content-type': 'application/octet-stream' },
    });
    expect(approved.status).toBe(200);
    const first = approved.json() as { Sid: string; RefreshToken: string };
    expect(first.Sid).toMatch(HEX64);
    expect(typeof first.RefreshToken).toBe('string');

    // The session's owners decide access to contents; header and cookie forms both work.
    const [owner] = aliceUser.owners;
    const data = randomBytes(100_000);
    const uploaded = await call(contentsUrl(owner!), {
      method: 'POST',
      body: data,
      headers: { ...sidHeaders(first.Sid), 'content-type': 'application/x-test' },
    });
    expect(uploaded.status).toBe(201);
    const { id } = uploaded.json();
    const downloaded = await call(contentsUrl(owner!, id), { headers: sidHeaders(first.Sid, 'cookie') });
    expect(downloaded.status).toBe(200);
    expect(Buffer.compare(downloaded.body, data)).toBe(0);
    expect(
      (await call(contentsUrl(randomUUID()), { method: 'POST', body: data, headers: sidHeaders(first.Sid) })).status,
    ).toBe(403);

    // Refresh: a new pair; the old sid stops working at once.
    const refreshed = await refresh(first.Sid, first.RefreshToken, apiKey);
    expect(refreshed.status).toBe(200);
    const second = refreshed.json() as { Sid: string; RefreshToken: string };
    expect(second.Sid).toMatch(HEX64);
    expect(second.Sid).not.toBe(first.Sid);
    expect(second.RefreshToken).not.toBe(first.RefreshToken);
    expect((await call(contentsUrl(owner!, id), { headers: sidHeaders(first.Sid) })).status).toBe(401);
    expect((await call(contentsUrl(owner!, id), { headers: sidHeaders(second.Sid) })).status).toBe(200);

    // The old pair again right away (a lost answer): the same new pair, nothing else changes.
    const retried = await refresh(first.Sid, first.RefreshToken, apiKey);
    expect(retried.status).toBe(200);
    expect(retried.json()).toEqual(second);
    expect((await call(contentsUrl(owner!, id), { headers: sidHeaders(first.Sid) })).status).toBe(401);

    // Once the new pair was refreshed in turn, the old refresh token is a reuse: 403, and the
    // whole family is revoked, the newest pair included.
    const third = (await refresh(second.Sid, second.RefreshToken, apiKey)).json() as {
      Sid: string;
      RefreshToken: string;
    };
    expect((await call(contentsUrl(owner!, id), { headers: sidHeaders(third.Sid) })).status).toBe(200);
    const reused = await refresh(first.Sid, first.RefreshToken, apiKey);
    expect(reused.status).toBe(403);
    expect(reused.json().Code).toBe('RefreshTokenReused');
    expect((await call(contentsUrl(owner!, id), { headers: sidHeaders(third.Sid) })).status).toBe(401);
    expect((await refresh(third.Sid, third.RefreshToken, apiKey)).status).toBe(403);
  });

  it('refreshes with the sid given as `sid` and the api key as X-Kontur-Apikey', async () => {
    const pair = await signIn(alice, apiKey, readFileSync(pki.chainFile(alice, bodyIntermediate)));
    const res = await call(
      `${testStack().gatewayUrl}/sessions/v5.12/sessions/refresh?sid=${pair.Sid}&refresh-token=${pair.RefreshToken}`,
      {
        method: 'POST',
        headers: { 'x-kontur-apikey': apiKey },
      },
    );
    expect(res.status).toBe(200);
    expect(res.json().Sid).toMatch(HEX64);
  });

  it('accepts the certificate as DER and as bare base64, with intermediates known to the service', async () => {
    const asDer = await challenge(bob, apiKey, bob.der);
    const asBase64 = await challenge(bob, apiKey, bob.der.toString('base64'));
    expect(asDer.rnd.length).toBe(48);
    // One rnd per user: the second authenticate replaced the first.
    expect((await approve(bob.thumbprint, asDer.rnd, apiKey)).json().Code).toBe('WrongKey');
    const ok = await approve(bob.thumbprint.toLowerCase(), asBase64.rnd, apiKey);
    expect(ok.status).toBe(200);
  });

  it('takes the api key from apiKey, api-key or X-Kontur-Apikey', async () => {
    for (const opts of [{ query: { 'api-key': apiKey } }, { headers: { 'x-kontur-apikey': apiKey } }, { apiKey }]) {
      const res = await authenticate(bob.pem, opts);
      expect(res.status).toBe(200);
    }
  });

  it.each(['ec-p256', 'ec-p384'] as const)(
    'signs in with an EC certificate (%s) through ECDH key agreement',
    async (kind) => {
      const ecUser = pki.issue(`ec-user-${kind}`, knownIntermediate, { kind });
      const user = await registerUser(ecUser);
      const pair = await signIn(ecUser, apiKey);
      expect(pair.Sid).toMatch(HEX64);
      const res = await call(contentsUrl(user.owners[0]!), {
        method: 'POST',
        body: Buffer.from('ec'),
        headers: sidHeaders(pair.Sid),
      });
      expect(res.status).toBe(201);
    },
  );

  it('exactly one of concurrent approves with the same rnd opens a session', async () => {
    const { rnd } = await challenge(bob, apiKey);
    const answers = await Promise.all(Array.from({ length: 8 }, () => approve(bob.thumbprint, rnd, apiKey)));
    expect(answers.filter((a) => a.status === 200)).toHaveLength(1);
    expect(answers.filter((a) => a.status === 403).map((a) => a.json().Code)).toEqual(
      Array(7).fill('RndBytesNotFound'),
    );
  });

  it('runs the admin command line through `pnpm --silent admin`', async () => {
    const key = (await pnpmAdmin('apikey', 'create')).trim();
    expect(key).toMatch(/^[0-9a-f]{64}$/);
    expect((await authenticate(bob.pem, { apiKey: key })).status).toBe(200);
  });
});
