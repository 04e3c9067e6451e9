import { redactedUrl } from '../src/accessLog';

describe('the access log URL', () => {
  it('hides the values of api keys, sids and refresh tokens in the query', () => {
    expect(redactedUrl('/auth/v5.13/authenticate-by-cert?apiKey=abc123&free=true')).toBe('/auth/v5.13/authenticate-by-cert?apiKey=***&free=true');
    expect(redactedUrl('/sessions/v5.13/sessions/refresh?auth.sid=S&refresh-token=R&api-key=K')).toBe('/sessions/v5.13/sessions/refresh?auth.sid=***&refresh-token=***&api-key=***');
    expect(redactedUrl('/x?API%2DKEY=K&thumbprint=AB')).toBe('/x?API%2DKEY=***&thumbprint=AB');
  });

  it('leaves other URLs as they are', () => {
    expect(redactedUrl('/v1/o/contents/c')).toBe('/v1/o/contents/c');
    expect(redactedUrl('/auth/v5.13/approve-cert?thumbprint=0A1B')).toBe('/auth/v5.13/approve-cert?thumbprint=0A1B');
    expect(redactedUrl('/x?%E0%A4%A=1')).toBe('/x?%E0%A4%A=1');
  });
});
