import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type JWK } from 'jose';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BearerVerifier, InvalidBearerToken, type BearerVerifierOptions } from '../src/http/BearerVerifier';

/** BearerVerifier against a JWKS served from loopback by the test itself: good, hanging, or garbage. */
describe('BearerVerifier with a remote JWKS', () => {
  let server: Server;
  let mode: 'keys' | 'hang' | 'garbage' = 'keys';
  let jwk: JWK;
  let privateKey: CryptoKey;
  let url: string;

  beforeAll(async () => {
    const pair = await generateKeyPair('ES256');
    privateKey = pair.privateKey;
    jwk = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'ES256' };
    server = createServer((_req, res) => {
      if (mode === 'hang') return; // never answers
      res.setHeader('content-type', 'application/json');
      res.end(mode === 'keys' ? JSON.stringify({ keys: [jwk] }) : '{"keys": "nope"}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks.json`;
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  const verifier = () =>
    new BearerVerifier({
      jwksUrl: url,
      issuer: 'https://issuer.test',
      audience: 'content-api',
      algorithms: ['ES256'],
      ownersClaim: 'owners',
      jwksTimeoutMs: 2_000, // long enough for a loaded machine to answer; the hanging case waits it out
    });
  const token = (claims: Record<string, unknown>, expiresIn = '5m') =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
      .setIssuer('https://issuer.test')
      .setAudience('content-api')
      .setIssuedAt()
      .setExpirationTime(expiresIn)
      .sign(privateKey);

  it('accepts a good token, with or without sub, and reads its owners', async () => {
    mode = 'keys';
    const v = verifier();
    await expect(v.verify(await token({ sub: 'alice', owners: ['AB'] }))).resolves.toEqual({
      kind: 'bearer',
      subject: 'alice',
      owners: ['ab'],
    });
    await expect(v.verify(await token({ client_id: 'batch-job', owners: 'cd' }))).resolves.toEqual({
      kind: 'bearer',
      subject: 'batch-job',
      owners: ['cd'],
    });
  });

  it('refuses a bad token as invalid', async () => {
    mode = 'keys';
    const expired = await token({ sub: 'alice', owners: [] }, '-1h');
    await expect(verifier().verify(expired)).rejects.toBeInstanceOf(InvalidBearerToken);
    await expect(verifier().verify('not.a.jwt')).rejects.toBeInstanceOf(InvalidBearerToken);
  });

  it('does not call the token invalid when the JWKS endpoint hangs or answers garbage', async () => {
    const good = await token({ sub: 'alice', owners: [] });
    mode = 'hang';
    const hanging = verifier().verify(good);
    await expect(hanging).rejects.toThrow();
    await expect(hanging).rejects.not.toBeInstanceOf(InvalidBearerToken);
    mode = 'garbage';
    const garbage = verifier().verify(good);
    await expect(garbage).rejects.toThrow();
    await expect(garbage).rejects.not.toBeInstanceOf(InvalidBearerToken);
  });
});

/** Verified tokens are answered from memory for a while, never past their exp, and bad ones never are. */
describe('BearerVerifier cache of verified tokens', () => {
  let privateKey: CryptoKey;
  let jwksFile: string;
  let now = Date.now();

  beforeAll(async () => {
    const pair = await generateKeyPair('ES256');
    privateKey = pair.privateKey;
    const dir = mkdtempSync(join(tmpdir(), 'bearer-cache-'));
    jwksFile = join(dir, 'jwks.json');
    writeFileSync(
      jwksFile,
      JSON.stringify({ keys: [{ ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'ES256' }] }),
    );
  });

  const verifier = (extra: Partial<BearerVerifierOptions> = {}) =>
    new BearerVerifier({
      jwksFile,
      issuer: 'https://issuer.test',
      audience: 'content-api',
      algorithms: ['ES256'],
      ownersClaim: 'owners',
      now: () => now,
      ...extra,
    });
  const token = (expSeconds: number, owners = ['ab']) =>
    new SignJWT({ sub: 'alice', owners })
      .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
      .setIssuer('https://issuer.test')
      .setAudience('content-api')
      .setIssuedAt(Math.floor(now / 1000))
      .setExpirationTime(expSeconds)
      .sign(privateKey);

  it('checks the signature once per token within the cache time, then again', async () => {
    now = Date.now();
    const v = verifier({ cacheSeconds: 60 });
    const checked = jest.spyOn(v as unknown as { checked: (t: string) => Promise<unknown> }, 'checked');
    const good = await token(Math.floor(now / 1000) + 3600);
    for (let i = 0; i < 5; i++)
      await expect(v.verify(good)).resolves.toEqual({ kind: 'bearer', subject: 'alice', owners: ['ab'] });
    expect(checked).toHaveBeenCalledTimes(1);
    now += 61_000;
    await v.verify(good);
    expect(checked).toHaveBeenCalledTimes(2);
  });

  it('never answers a token from memory past its exp', async () => {
    now = Date.now();
    const v = verifier({ cacheSeconds: 600, clockToleranceSeconds: 0 });
    const soon = await token(Math.floor(now / 1000) + 10);
    await expect(v.verify(soon)).resolves.toMatchObject({ subject: 'alice' });
    now += 11_000;
    await expect(v.verify(soon)).rejects.toBeInstanceOf(InvalidBearerToken);
  });

  it('keeps no bad token, hands out copies, and holds at most cacheEntries tokens', async () => {
    now = Date.now();
    const v = verifier({ cacheEntries: 2 });
    const checked = jest.spyOn(v as unknown as { checked: (t: string) => Promise<unknown> }, 'checked');
    const tampered = `${(await token(Math.floor(now / 1000) + 3600)).slice(0, -4)}AAAA`;
    await expect(v.verify(tampered)).rejects.toBeInstanceOf(InvalidBearerToken);
    await expect(v.verify(tampered)).rejects.toBeInstanceOf(InvalidBearerToken);
    expect(checked).toHaveBeenCalledTimes(2);

    const [a, b, c] = await Promise.all([0, 1, 2].map((i) => token(Math.floor(now / 1000) + 3600 + i)));
    const first = await v.verify(a!);
    first.owners.push('someone-else');
    await expect(v.verify(a!)).resolves.toEqual({ kind: 'bearer', subject: 'alice', owners: ['ab'] });
    await v.verify(b!);
    await v.verify(c!); // a goes: the oldest
    checked.mockClear();
    await v.verify(c!);
    await v.verify(b!);
    expect(checked).toHaveBeenCalledTimes(0);
    await v.verify(a!);
    expect(checked).toHaveBeenCalledTimes(1);
  });

  it('with cacheSeconds 0 checks every time', async () => {
    now = Date.now();
    const v = verifier({ cacheSeconds: 0 });
    const checked = jest.spyOn(v as unknown as { checked: (t: string) => Promise<unknown> }, 'checked');
    const good = await token(Math.floor(now / 1000) + 3600);
    await v.verify(good);
    await v.verify(good);
    expect(checked).toHaveBeenCalledTimes(2);
  });
});
