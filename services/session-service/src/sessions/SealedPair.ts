import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

/** A Sid + RefreshToken pair as the client receives it. */
export interface TokenPair {
  Sid: string;
  RefreshToken: string;
}

const SALT = Buffer.from('content-platform/session-grace/v1');

/**
 * The pair issued for a refresh token, encrypted under a key only the holder of that (old)
 * refresh token can derive: HKDF-SHA256 of its 32 bytes, then AES-256-GCM bound to its stored
 * hash. The database keeps only SHA-256 of the token, from which the key cannot be derived, so a
 * leaked rotation record reveals nothing usable.
 */
export function sealPair(oldRefreshToken: string, oldRefreshHash: string, pair: TokenPair): string {
  const key = keyFor(oldRefreshToken);
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(oldRefreshHash, 'hex'));
  const sealed = Buffer.concat([cipher.update(JSON.stringify(pair), 'utf8'), cipher.final()]);
  key.fill(0);
  return Buffer.concat([iv, cipher.getAuthTag(), sealed]).toString('base64');
}

/** The pair sealed by sealPair, or null when the token or the record does not fit. */
export function openPair(oldRefreshToken: string, oldRefreshHash: string, sealedText: string): TokenPair | null {
  const raw = Buffer.from(sealedText, 'base64');
  if (raw.length < 29) return null;
  const key = keyFor(oldRefreshToken);
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
    decipher.setAAD(Buffer.from(oldRefreshHash, 'hex'));
    decipher.setAuthTag(raw.subarray(12, 28));
    const text = Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
    const pair = JSON.parse(text) as Partial<TokenPair>;
    return typeof pair.Sid === 'string' && typeof pair.RefreshToken === 'string'
      ? { Sid: pair.Sid, RefreshToken: pair.RefreshToken }
      : null;
  } catch {
    return null;
  } finally {
    key.fill(0);
  }
}

function keyFor(refreshToken: string): Buffer {
  return Buffer.from(hkdfSync('sha256', Buffer.from(refreshToken, 'hex'), SALT, 'refresh grace pair', 32));
}
