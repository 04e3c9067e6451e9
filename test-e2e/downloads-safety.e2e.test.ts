import { randomBytes } from 'node:crypto';
import { tokenFor } from './support/stack';
import { call, contentsUrl, newOwner, postPart } from './support/http';

/** A stored content is whatever a client uploaded: a download must never run as a page of the API's origin. */
describe('downloads cannot run as pages', () => {
  const owner = newOwner();
  let token: string;
  let id: string;

  beforeAll(async () => {
    token = await tokenFor([owner]);
    const created = await postPart(
      owner,
      token,
      Buffer.from('<html><script>alert(document.cookie)</script></html>'),
      null,
      'text/html',
    );
    expect(created.status).toBe(201);
    id = created.json().id;
  });

  const expectSafe = (headers: Headers) => {
    expect(headers.get('x-content-type-options')).toBe('nosniff');
    expect(headers.get('content-security-policy')).toBe('sandbox');
    expect(headers.get('content-disposition')).toBe('attachment');
  };

  it('sends nosniff, a sandbox policy and attachment on a whole download', async () => {
    const answer = await call(contentsUrl(owner, id), { token });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toBe('text/html');
    expectSafe(answer.headers);
  });

  it('sends them on ranged downloads and on HEAD of a ready content', async () => {
    const ranged = await call(contentsUrl(owner, id), { token, headers: { range: 'bytes=0-5' } });
    expect(ranged.status).toBe(206);
    expectSafe(ranged.headers);
    const head = await call(contentsUrl(owner, id), { token, method: 'HEAD' });
    expect(head.status).toBe(200);
    expectSafe(head.headers);
  });

  it('refuses a Content-Type outside the media-type grammar with 400, storing nothing', async () => {
    const answer = await postPart(owner, token, randomBytes(10), null, 'text/html; <script>');
    expect(answer.status).toBe(400);
    expect(answer.json().id).toBe('urn:error:contents:invalidContentType');
  });
});
