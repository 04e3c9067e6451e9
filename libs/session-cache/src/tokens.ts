import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

const HEX64 = /^[0-9A-Fa-f]{64}$/;

/** A new Sid or RefreshToken: 32 CSPRNG bytes as 64 upper-case hex characters. */
export function newToken(): string {
  return randomBytes(32).toString('hex').toUpperCase();
}

/**
 * The stored form of a Sid or RefreshToken: SHA-256 of its 32 bytes, hex. Null when the text is
 * not a token at all (it cannot match anything, so callers answer "unknown" without a lookup).
 */
export function tokenHash(token: string | undefined | null): string | null {
  if (typeof token !== 'string' || !HEX64.test(token)) return null;
  return createHash('sha256').update(Buffer.from(token, 'hex')).digest('hex');
}

export function sameHash(a: string, b: string): boolean {
  const x = Buffer.from(a, 'hex');
  const y = Buffer.from(b, 'hex');
  return x.length === y.length && timingSafeEqual(x, y);
}
