import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type JWK } from 'jose';
import { BearerVerifier, InvalidBearerToken } from '../src';

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
      jwksTimeoutMs: 300,
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
    await expect(v.verify(await token({ sub: 'alice', owners: ['AB'] }))).resolves.toEqual({ kind: 'bearer', subject: 'alice', owners: ['ab'] });
    await expect(v.verify(await token({ client_id: 'batch-job', owners: 'cd' }))).resolves.toEqual({ kind: 'bearer', subject: 'batch-job', owners: ['cd'] });
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
