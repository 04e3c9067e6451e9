import { createHash } from 'node:crypto';

/** How many groups owners are hashed into for the in-memory "may have webhooks" index. */
export const OWNER_GROUPS = 4096;

/** The owner's group: the same in every replica. */
export function ownerGroup(ownerId: string): string {
  return String(createHash('sha1').update(ownerId).digest().readUInt16BE(0) % OWNER_GROUPS);
}

/**
 * The Redis keys of webhooks, all under `wh:<ns>:` (ns: the bucket, as the uploads' `up:<ns>:`):
 * `hooks:<owner>` (hash id → webhook), `owners` (hash owner → its webhooks, for a sweep over all of
 * them), `groups` (hash owner group → webhooks in it), `intents`
 * (zset event id → check time) with `intent` (hash event id → intent), `due` (zset delivery id →
 * due time) with `delivery` (hash delivery id → delivery), `published` (zset event id → when).
 */
export class WebhookKeys {
  readonly groups: string;
  readonly owners: string;
  readonly intents: string;
  readonly intent: string;
  readonly due: string;
  readonly delivery: string;
  readonly published: string;
  private readonly prefix: string;

  constructor(namespace: string) {
    this.prefix = `wh:${namespace}:`;
    this.groups = `${this.prefix}groups`;
    this.owners = `${this.prefix}owners`;
    this.intents = `${this.prefix}intents`;
    this.intent = `${this.prefix}intent`;
    this.due = `${this.prefix}due`;
    this.delivery = `${this.prefix}delivery`;
    this.published = `${this.prefix}published`;
  }

  hooks(ownerId: string): string {
    return `${this.prefix}hooks:${ownerId}`;
  }
}
