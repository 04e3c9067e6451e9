import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto';

/** A stored webhook secret that no configured key opens (its key was taken out of the list). */
export class SecretUnreadable extends Error {
  override readonly name = 'SecretUnreadable';
  readonly code = 'CP_ERR_WEBHOOK_SECRET_UNREADABLE';
}

/** The shortest key accepted: 32 characters (256 bits of a random base64 string are 43). */
export const SECRET_KEY_MIN_LENGTH = 32;

const SEALED = /^v1\.([0-9a-f]{16})\.([A-Za-z0-9_-]{16})\.([A-Za-z0-9_-]+)$/;
const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * Webhook secrets sealed at rest: AES-256-GCM under a key derived (HKDF-SHA256) from the first of
 * the operator's keys, bound to the webhook it signs for (owner and id as associated data, so a
 * sealed secret copied onto another webhook does not open). A copy of Redis (a dump, a replica, a
 * backup) then holds no secret that can sign a delivery. Every listed key opens what it sealed: a
 * new key goes first, and an old one may go once nothing is sealed under it (`stale`). With no
 * key, secrets are kept as they are; a secret stored plain (`whsec_...`) always opens as itself.
 * Sealed: `v1.<key id>.<iv>.<ciphertext and tag>` (key id: 8 bytes of the derived key's SHA-256).
 */
export class SecretBox {
  private readonly keys: { id: string; key: Buffer }[];

  constructor(secrets: readonly string[]) {
    this.keys = secrets.map((secret) => {
      if (secret.length < SECRET_KEY_MIN_LENGTH)
        throw new RangeError(`a webhook secret key must be at least ${SECRET_KEY_MIN_LENGTH} characters`);
      const key = Buffer.from(hkdfSync('sha256', secret, Buffer.alloc(0), 'content-platform webhook secrets v1', 32));
      return { id: createHash('sha256').update(key).digest('hex').slice(0, 16), key };
    });
  }

  /** Whether secrets are sealed (a key is configured). */
  get sealing(): boolean {
    return this.keys.length > 0;
  }

  /** The id of the key new secrets are sealed under, for logs; null without one. */
  get currentKeyId(): string | null {
    return this.keys[0]?.id ?? null;
  }

  /** The secret as it is stored: sealed under the first key, or as it is without one. */
  seal(secret: string, ownerId: string, webhookId: string): string {
    const current = this.keys[0];
    if (!current) return secret;
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', current.key, iv).setAAD(boundTo(ownerId, webhookId));
    const sealed = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final(), cipher.getAuthTag()]);
    return `v1.${current.id}.${iv.toString('base64url')}.${sealed.toString('base64url')}`;
  }

  /** The secret a stored value holds; SecretUnreadable when no configured key opens it. */
  open(stored: string, ownerId: string, webhookId: string): string {
    const m = SEALED.exec(stored);
    if (!m) return stored;
    const key = this.keys.find((k) => k.id === m[1]);
    if (!key)
      throw new SecretUnreadable(
        `webhook ${webhookId}'s secret is sealed under key ${m[1]}, which is not among WEBHOOK_SECRET_KEYS`,
      );
    const bytes = Buffer.from(m[3]!, 'base64url');
    try {
      const decipher = createDecipheriv('aes-256-gcm', key.key, Buffer.from(m[2]!, 'base64url'))
        .setAAD(boundTo(ownerId, webhookId))
        .setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
      return Buffer.concat([decipher.update(bytes.subarray(0, bytes.length - TAG_BYTES)), decipher.final()]).toString(
        'utf8',
      );
    } catch {
      throw new SecretUnreadable(`webhook ${webhookId}'s sealed secret does not open: it was changed or moved`);
    }
  }

  /** Whether a stored value is not sealed under the first key (plain while a key is set, or an older key). */
  stale(stored: string): boolean {
    const current = this.keys[0];
    if (!current) return false;
    return SEALED.exec(stored)?.[1] !== current.id;
  }
}

function boundTo(ownerId: string, webhookId: string): Buffer {
  return Buffer.from(`${ownerId}/${webhookId}`, 'utf8');
}
