import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { newToken, sameHash, tokenHash } from '../src';

describe('session tokens', () => {
  it('are 32 random bytes as 64 upper-case hex characters, never repeating', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 1000; i++) {
      const t = newToken();
      expect(t).toMatch(/^[0-9A-F]{64}$/);
      seen.add(t);
    }
    expect(seen.size).toBe(1000);
  });

  it('are stored as SHA-256 of their bytes, whatever the case of the hex', () => {
    const t = newToken();
    const expected = createHash('sha256').update(Buffer.from(t, 'hex')).digest('hex');
    expect(tokenHash(t)).toBe(expected);
    expect(tokenHash(t.toLowerCase())).toBe(expected);
  });

  it('have no hash when they are not 64 hex characters', () => {
    fc.assert(
      fc.property(fc.string(), (s) => {
        fc.pre(!/^[0-9A-Fa-f]{64}$/.test(s));
        expect(tokenHash(s)).toBeNull();
      }),
    );
    expect(tokenHash(undefined)).toBeNull();
  });

  it('compare hashes exactly', () => {
    const a = tokenHash(newToken())!;
    expect(sameHash(a, a)).toBe(true);
    expect(sameHash(a, tokenHash(newToken())!)).toBe(false);
  });
});
