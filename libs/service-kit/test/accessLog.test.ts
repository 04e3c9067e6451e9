import { withoutSecrets } from '../src/accessLog';

describe('withoutSecrets (the URL an access log line carries)', () => {
  it('replaces the values of the sid, refresh token and api key query parameters, in every spelling', () => {
    const url = '/sessions/v5.13/sessions/refresh?auth.sid=AAAA&refresh-token=BBBB&api-key=CCCC&sid=DDDD&refreshToken=EEEE&apiKey=FFFF&free=true';
    const logged = withoutSecrets(url);
    for (const secret of ['AAAA', 'BBBB', 'CCCC', 'DDDD', 'EEEE', 'FFFF']) expect(logged).not.toContain(secret);
    expect(logged).toBe(
      '/sessions/v5.13/sessions/refresh?auth.sid=[redacted]&refresh-token=[redacted]&api-key=[redacted]&sid=[redacted]&refreshToken=[redacted]&apiKey=[redacted]&free=true',
    );
  });

  it('recognises percent-encoded names and leaves other URLs alone', () => {
    expect(withoutSecrets('/auth/v5.13/approve-cert?thumbprint=AB&api%2Dkey=SECRET')).toBe('/auth/v5.13/approve-cert?thumbprint=AB&api%2Dkey=[redacted]');
    expect(withoutSecrets('/v1/o/contents/c')).toBe('/v1/o/contents/c');
    expect(withoutSecrets('/x?bad=%E0%A4%A')).toBe('/x?bad=%E0%A4%A');
  });
});
