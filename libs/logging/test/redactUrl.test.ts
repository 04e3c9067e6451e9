import fc from 'fast-check';
import { redactUrl } from '../src/redactUrl';

describe('redactUrl', () => {
  it.each([
    ['/auth/v5.13/authenticate-by-cert?apiKey=SECRET', '/auth/v5.13/authenticate-by-cert?apiKey=[redacted]'],
    [
      '/sessions/v5.13/sessions/refresh?auth.sid=S1&refresh-token=R1&api-key=K1',
      '/sessions/v5.13/sessions/refresh?auth.sid=[redacted]&refresh-token=[redacted]&api-key=[redacted]',
    ],
    ['/x?sid=S&free=true', '/x?sid=[redacted]&free=true'],
    ['/x?Api%2DKey=S&thumbprint=AB', '/x?Api%2DKey=[redacted]&thumbprint=AB'],
    [
      '/x?client_secret=S&access_token=T&myKey=K',
      '/x?client_secret=[redacted]&access_token=[redacted]&myKey=[redacted]',
    ],
    ['/v1/a/contents/b', '/v1/a/contents/b'],
    ['/x?free&thumbprint=1', '/x?free&thumbprint=1'],
    ['/x?refreshToken=E&bad=%E0%A4%A', '/x?refreshToken=[redacted]&bad=%E0%A4%A'],
    ['/x?api%2Dkey%E0=S', '/x?api%2Dkey%E0=[redacted]'],
  ])('masks the secret parameters of %s', (url, expected) => {
    expect(redactUrl(url)).toBe(expected);
  });

  it('never lets the value of a secret parameter through, whatever the rest of the query', () => {
    const name = fc.constantFrom(
      'apiKey',
      'api-key',
      'auth.sid',
      'sid',
      'refresh-token',
      'SID',
      'x-token',
      'the_secret',
    );
    const value = fc.stringMatching(/^[A-Za-z0-9]{24,64}$/);
    const other = fc.tuple(
      fc.stringMatching(/^[a-z]{1,8}$/).filter((n) => !/key|token|sid|secret|auth|pass|sign|cred/.test(n)),
      fc.stringMatching(/^[a-z0-9]{0,8}$/),
    );
    fc.assert(
      fc.property(name, value, fc.array(other, { maxLength: 4 }), fc.nat(4), (n, v, rest, at) => {
        const pairs = rest.map(([k, x]) => `${k}=${x}`);
        pairs.splice(Math.min(at, pairs.length), 0, `${n}=${v}`);
        const out = redactUrl(`/p?${pairs.join('&')}`);
        expect(out).not.toContain(v);
        for (const p of rest) expect(out).toContain(`${p[0]}=${p[1]}`);
      }),
    );
  });
});
