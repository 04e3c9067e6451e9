import { prefersRedirect } from '../src/http/directRouter';

describe('Prefer: redirect', () => {
  it('is read as RFC 7240 preferences: a token among others, any case, parameters ignored', () => {
    expect(prefersRedirect('redirect')).toBe(true);
    expect(prefersRedirect('respond-async, Redirect; foo=bar')).toBe(true);
    expect(prefersRedirect('return=minimal,redirect')).toBe(true);
    expect(prefersRedirect(undefined)).toBe(false);
    expect(prefersRedirect('')).toBe(false);
    expect(prefersRedirect('return=redirect')).toBe(false);
    expect(prefersRedirect('redirected')).toBe(false);
  });
});
