import { loggableUrl } from '@cp/service-kit';

describe('loggableUrl', () => {
  it('hides api keys, sids and refresh tokens in the query', () => {
    const key = 'K'.repeat(32);
    const sid = 'A'.repeat(64);
    const logged = loggableUrl(`/sessions/v5.13/sessions/refresh?auth.sid=${sid}&refresh-token=${sid}&api-key=${key}&sid=${sid}`);
    expect(logged).toBe('/sessions/v5.13/sessions/refresh?auth.sid=[redacted]&refresh-token=[redacted]&api-key=[redacted]&sid=[redacted]');
    expect(loggableUrl(`/auth/v5.13/approve-cert?thumbprint=AB12&apiKey=${key}&free=true`)).toBe('/auth/v5.13/approve-cert?thumbprint=AB12&apiKey=[redacted]&free=true');
    expect(loggableUrl(`/auth/v5.13/authenticate-by-cert?api%2Dkey=${key}&APIKEY=${key}`)).not.toContain(key);
  });

  it('leaves other URLs as they are', () => {
    expect(loggableUrl('/v1/abc/contents/def')).toBe('/v1/abc/contents/def');
    expect(loggableUrl('/x?free=true&flag')).toBe('/x?free=true&flag');
  });
});
