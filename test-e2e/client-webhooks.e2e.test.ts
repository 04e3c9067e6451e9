// `content webhook add|ls|rm` and ContentClient's webhooks against the running system, and the
// client's verifyWebhookSignature on a delivery the platform signed.
import { randomUUID } from 'node:crypto';
import { ContentClient, verifyWebhookSignature, type CreatedWebhook } from '@cp/client';
import { cli } from './support/contentCli';
import { testStack, tokenFor } from './support/stack';
import { WebhookReceiver } from './support/webhookReceiver';

describe('webhooks from the client and the command line', () => {
  const owner = randomUUID();
  let token: string;
  let client: ContentClient;
  const receiver = new WebhookReceiver();
  let receiverUrl: string;

  beforeAll(async () => {
    token = await tokenFor([owner]);
    client = new ContentClient({ baseUrl: testStack().gatewayUrl, credentials: { kind: 'bearer', token } });
    receiverUrl = await receiver.start();
  });
  afterAll(async () => {
    client?.close();
    await receiver.stop();
  });

  const run = (...args: string[]) =>
    cli([...args, '--owner', owner, '--url', testStack().gatewayUrl], { env: { CONTENT_TOKEN: token } });

  it('creates, lists and deletes with ContentClient; a delivery verifies with the secret it answered', async () => {
    const created = await client.webhooks.create(owner, { url: receiverUrl, events: ['content.completed'] });
    expect(created.secret).toMatch(/^whsec_/);
    expect((await client.webhooks.list(owner)).map((w) => w.id)).toEqual([created.id]);
    const id = await client.uploadStream(
      (async function* () {
        yield Buffer.from('verify me');
      })(),
      { owner, size: 9 },
    );
    await receiver.until(() => receiver.about(id, 'content.completed').length > 0);
    const [delivery] = receiver.about(id, 'content.completed');
    expect(verifyWebhookSignature(created.secret, delivery!.headers, delivery!.body, 300)).toBe(true);
    expect(verifyWebhookSignature(created.secret, delivery!.headers, `${delivery!.body} `, 300)).toBe(false);
    await client.webhooks.delete(owner, created.id);
    await expect(client.webhooks.delete(owner, created.id)).rejects.toMatchObject({ status: 404 });
  });

  it('`content webhook add` prints the secret once, `ls` lists without it, `rm` deletes (then exit 4)', async () => {
    const added = await run('webhook', 'add', receiverUrl, '--events', 'content.deleted,content.expired', '--json');
    expect(added.code).toBe(0);
    const hook = JSON.parse(added.stdout) as CreatedWebhook;
    expect(hook).toMatchObject({ url: receiverUrl, events: ['content.deleted', 'content.expired'] });
    const listed = await run('webhook', 'ls');
    expect(listed.stdout).toContain(hook.id);
    expect(listed.stdout).not.toContain(hook.secret);
    expect((await run('webhook', 'add', receiverUrl, '--events', 'content.created')).code).toBe(2);
    expect((await run('webhook', 'rm', hook.id)).code).toBe(0);
    expect((await run('webhook', 'rm', hook.id)).code).toBe(4);
    expect((await run('webhook', 'ls')).stdout).toContain('(no webhooks)');
  });
});
