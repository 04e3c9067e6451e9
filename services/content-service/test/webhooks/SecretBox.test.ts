import { SecretBox, SecretUnreadable } from '../../src/webhooks/SecretBox';

const OLD = 'an-old-key-of-at-least-thirty-two-characters';
const NEW = 'a-new-key-of-at-least-thirty-two-characters!';
const SECRET = 'whsec_c2VjcmV0LXRoYXQtc2lnbnMtZXZlcnktZGVsaXZlcnk';

describe('SecretBox', () => {
  it('seals so that nothing of the secret shows, and opens what it sealed', () => {
    const box = new SecretBox([NEW]);
    const sealed = box.seal(SECRET, 'owner-a', 'hook-1');
    expect(sealed).toMatch(/^v1\.[0-9a-f]{16}\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]+$/);
    expect(sealed).not.toContain(SECRET.slice(6, 20));
    expect(box.seal(SECRET, 'owner-a', 'hook-1')).not.toBe(sealed); // a fresh IV each time
    expect(box.open(sealed, 'owner-a', 'hook-1')).toBe(SECRET);
    expect(box.stale(sealed)).toBe(false);
  });

  it('opens a sealed secret only for the webhook it was sealed for', () => {
    const box = new SecretBox([NEW]);
    const sealed = box.seal(SECRET, 'owner-a', 'hook-1');
    expect(() => box.open(sealed, 'owner-b', 'hook-1')).toThrow(SecretUnreadable);
    expect(() => box.open(sealed, 'owner-a', 'hook-2')).toThrow(SecretUnreadable);
    const [v, id, iv, bytes] = sealed.split('.');
    const flipped = Buffer.from(bytes!, 'base64url');
    flipped[0]! ^= 1;
    expect(() => box.open([v, id, iv, flipped.toString('base64url')].join('.'), 'owner-a', 'hook-1')).toThrow(
      /was changed or moved/,
    );
  });

  it('opens under every listed key, seals under the first, and says what is stale', () => {
    const sealedOld = new SecretBox([OLD]).seal(SECRET, 'o', 'h');
    const rotated = new SecretBox([NEW, OLD]);
    expect(rotated.open(sealedOld, 'o', 'h')).toBe(SECRET);
    expect(rotated.stale(sealedOld)).toBe(true);
    expect(rotated.stale(SECRET)).toBe(true); // stored plain before a key was set
    expect(rotated.stale(rotated.seal(SECRET, 'o', 'h'))).toBe(false);
    const withoutOld = new SecretBox([NEW]);
    expect(() => withoutOld.open(sealedOld, 'o', 'h')).toThrow(/not among WEBHOOK_SECRET_KEYS/);
  });

  it('keeps secrets as they are without a key, and still opens plain ones with a key', () => {
    const none = new SecretBox([]);
    expect(none.sealing).toBe(false);
    expect(none.seal(SECRET, 'o', 'h')).toBe(SECRET);
    expect(none.stale(SECRET)).toBe(false);
    expect(none.open(SECRET, 'o', 'h')).toBe(SECRET);
    expect(() => none.open(new SecretBox([NEW]).seal(SECRET, 'o', 'h'), 'o', 'h')).toThrow(SecretUnreadable);
    expect(new SecretBox([NEW]).open(SECRET, 'o', 'h')).toBe(SECRET);
  });

  it('refuses a key shorter than 32 characters', () => {
    expect(() => new SecretBox(['short'])).toThrow(/at least 32 characters/);
  });
});
