// CORS through the real gateway and content-service: the test stack allows one origin
// (CORS_ALLOWED_ORIGINS in support/globalSetup.js). A preflight is answered at the gateway; a
// download from that origin is granted with the headers a page needs (Repr-Digest, Content-Range);
// the same download from another origin gets the same bytes and no grant.
import { randomBytes } from 'node:crypto';
import { tokenFor } from './support/stack';
import { call, contentsUrl, newOwner, rawRequest } from './support/http';

const ALLOWED = 'http://app.cors.test:5173';

describe('CORS through the gateway', () => {
  const owner = newOwner();
  const bytes = randomBytes(5_000);
  let token: string;
  let id: string;

  beforeAll(async () => {
    token = await tokenFor([owner]);
    const created = await call(contentsUrl(owner), { method: 'POST', body: bytes, token });
    expect(created.status).toBe(201);
    id = (created.json() as { id: string }).id;
  });

  const get = (origin: string) =>
    rawRequest(
      [
        `GET /v1/${owner}/contents/${id} HTTP/1.1`,
        'Host: gateway.test',
        `Origin: ${origin}`,
        `Authorization: Bearer ${token}`,
        'Range: bytes=100-199',
        'Connection: close',
      ].join('\n'),
    );

  it('answers the preflight of a ranged download at the gateway', async () => {
    const res = await rawRequest(
      [
        `OPTIONS /v1/${owner}/contents/${id} HTTP/1.1`,
        'Host: gateway.test',
        `Origin: ${ALLOWED}`,
        'Access-Control-Request-Method: GET',
        'Access-Control-Request-Headers: authorization, range',
        'Connection: close',
      ].join('\n'),
    );
    console.log(`preflight: ${res.status}, max age ${res.headers['access-control-max-age']} s`);
    expect(res.status).toBe(204);
    expect(res.headers['access-control-allow-origin']).toBe(ALLOWED);
    expect(res.headers['access-control-allow-headers']!.toLowerCase()).toMatch(
      /\bauthorization\b.*\brange\b|\brange\b.*\bauthorization\b/,
    );
    expect(res.headers['access-control-allow-methods']).toContain('GET');
  });

  it('grants the allowed origin its download and the headers it needs to read', async () => {
    const res = await get(ALLOWED);
    expect(res.status).toBe(206);
    expect(Buffer.from(res.body, 'latin1').equals(bytes.subarray(100, 200))).toBe(true);
    expect(res.headers['access-control-allow-origin']).toBe(ALLOWED);
    const exposed = res.headers['access-control-expose-headers']!.split(', ');
    expect(exposed).toEqual(expect.arrayContaining(['Repr-Digest', 'Content-Range', 'X-Request-Id']));
    expect(res.headers['repr-digest']).toMatch(/crc64nvme=:/);
    expect(res.headers.vary).toMatch(/\bOrigin\b/);
  });

  it('serves another origin the same bytes and grants it nothing', async () => {
    const res = await get('http://elsewhere.test');
    expect(res.status).toBe(206);
    expect(Buffer.from(res.body, 'latin1').equals(bytes.subarray(100, 200))).toBe(true);
    expect(Object.keys(res.headers).filter((h) => h.startsWith('access-control-'))).toEqual([]);
  });

  it('grants a refusal too, so that a page can read why', async () => {
    const res = await rawRequest(
      [
        `GET /v1/${owner}/contents/${id} HTTP/1.1`,
        'Host: gateway.test',
        `Origin: ${ALLOWED}`,
        'Connection: close',
      ].join('\n'),
    );
    expect(res.status).toBe(401);
    expect(res.headers['access-control-allow-origin']).toBe(ALLOWED);
    expect(res.headers['x-error-id']).toBe('urn:error:contents:missingCredentials');
  });
});
