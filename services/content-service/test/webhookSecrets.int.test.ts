// Webhook secrets sealed in the real Redis, as the content-service's Redis user (the ACL of
// deploy/compose.yaml): nothing of a secret in what Redis holds, the secret back for a delivery,
// a rotation sealed by the sweep and by a delivery's read, and a secret whose key went.
import { randomBytes, randomUUID } from 'node:crypto';
import { redisCommand } from '@cp/redis';
import { connectAsServiceUser } from '../../../test-e2e/support/redisAcl';
import { testStack } from '../../../test-e2e/support/stack';
import { SecretBox, SecretUnreadable } from '../src/webhooks/SecretBox';
import { WebhookStore } from '../src/webhooks/WebhookStore';

const OLD = randomBytes(32).toString('base64url');
const NEW = randomBytes(32).toString('base64url');
const URL = 'https://hooks.example.com/in';

describe('webhook secrets sealed in Redis', () => {
  let user: Awaited<ReturnType<typeof connectAsServiceUser>>;
  beforeAll(async () => {
    user = await connectAsServiceUser(testStack().backing.REDIS_URL, 'content-service');
  });
  afterAll(async () => {
    await user?.close();
  });

  const namespace = () => `whs-${randomBytes(4).toString('hex')}`;
  const storedSecret = async (store: WebhookStore, owner: string, id: string) =>
    (
      JSON.parse((await redisCommand<string>(user.client, ['HGET', store.keys.hooks(owner), id]))!) as {
        secret: string;
      }
    ).secret;

  it('keeps no secret readable in Redis, and gives it back for a delivery', async () => {
    const store = new WebhookStore(user.client, namespace(), 3, new SecretBox([NEW]));
    const owner = randomUUID();
    const hook = await store.create(owner, URL, ['content.completed'], new Date());
    expect(hook.secret).toMatch(/^whsec_/);
    const stored = await storedSecret(store, owner, hook.id);
    expect(stored).toMatch(/^v1\./);
    expect(stored).not.toContain(hook.secret.slice(6));
    expect((await store.find(owner, hook.id))?.secret).toBe(hook.secret);
    expect(await store.list(owner)).toEqual([
      { id: hook.id, url: URL, events: ['content.completed'], 'created-at': hook['created-at'] },
    ]);
  });

  it('seals anew, on a sweep or on a read, what an older key or none sealed', async () => {
    const ns = namespace();
    const plainStore = new WebhookStore(user.client, ns, 3);
    const oldStore = new WebhookStore(user.client, ns, 3, new SecretBox([OLD]));
    const [a, b] = [randomUUID(), randomUUID()];
    const plain = await plainStore.create(a, URL, ['content.completed'], new Date());
    const sealedOld = await oldStore.create(a, URL, ['content.deleted'], new Date());
    const other = await oldStore.create(b, URL, ['content.completed'], new Date());
    expect(await storedSecret(plainStore, a, plain.id)).toBe(plain.secret);

    const rotated = new WebhookStore(user.client, ns, 3, new SecretBox([NEW, OLD]));
    // A delivery's read seals its own webhook anew.
    expect((await rotated.find(b, other.id))?.secret).toBe(other.secret);
    const newId = (await storedSecret(rotated, b, other.id)).split('.')[1];
    expect(newId).not.toBe((await storedSecret(rotated, a, sealedOld.id)).split('.')[1]);
    // The sweep seals the rest: the plain one and the one under the old key.
    expect(await rotated.resealAll()).toEqual({ owners: 2, webhooks: 3, resealed: 2, unreadable: 0 });
    for (const [owner, id] of [
      [a, plain.id],
      [a, sealedOld.id],
    ] as const)
      expect((await storedSecret(rotated, owner, id)).split('.')[1]).toBe(newId);
    expect(await rotated.resealAll()).toEqual({ owners: 2, webhooks: 3, resealed: 0, unreadable: 0 });

    // The old key may now go: every secret opens under the new one alone.
    const newOnly = new WebhookStore(user.client, ns, 3, new SecretBox([NEW]));
    for (const [owner, hook] of [
      [a, plain],
      [a, sealedOld],
      [b, other],
    ] as const)
      expect((await newOnly.find(owner, hook.id))?.secret).toBe(hook.secret);
  });

  it('says which secrets no key opens, and keeps them for a key put back', async () => {
    const ns = namespace();
    const owner = randomUUID();
    const hook = await new WebhookStore(user.client, ns, 3, new SecretBox([OLD])).create(
      owner,
      URL,
      ['content.completed'],
      new Date(),
    );
    const lost = new WebhookStore(user.client, ns, 3, new SecretBox([NEW]));
    await expect(lost.find(owner, hook.id)).rejects.toThrow(SecretUnreadable);
    expect(await lost.resealAll()).toEqual({ owners: 1, webhooks: 1, resealed: 0, unreadable: 1 });
    const back = new WebhookStore(user.client, ns, 3, new SecretBox([NEW, OLD]));
    expect((await back.find(owner, hook.id))?.secret).toBe(hook.secret);
  });

  it('sweeps owners page after page', async () => {
    const ns = namespace();
    const plain = new WebhookStore(user.client, ns, 3);
    const owners = Array.from({ length: 450 }, () => randomUUID());
    await Promise.all(owners.map((o) => plain.create(o, URL, ['content.completed'], new Date())));
    const sealing = new WebhookStore(user.client, ns, 3, new SecretBox([NEW]));
    expect(await sealing.resealAll()).toEqual({ owners: 450, webhooks: 450, resealed: 450, unreadable: 0 });
  });

  it('counts the owners with webhooks as they are made and removed', async () => {
    const store = new WebhookStore(user.client, namespace(), 3, new SecretBox([NEW]));
    const owner = randomUUID();
    const first = await store.create(owner, URL, ['content.completed'], new Date());
    const second = await store.create(owner, URL, ['content.deleted'], new Date());
    const owners = () => redisCommand<string[] | Record<string, string>>(user.client, ['HGETALL', store.keys.owners]);
    const count = async () => {
      const flat = await owners();
      return Array.isArray(flat) ? flat : Object.entries(flat).flat();
    };
    expect(await count()).toEqual([owner, '2']);
    expect(await store.remove(owner, first.id)).toBe(true);
    expect(await count()).toEqual([owner, '1']);
    expect(await store.remove(owner, second.id)).toBe(true);
    expect(await count()).toEqual([]);
    expect(await store.resealAll()).toEqual({ owners: 0, webhooks: 0, resealed: 0, unreadable: 0 });
  });
});
