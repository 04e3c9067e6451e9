// The events of completions answered by a later request than the one that completed the content,
// against real Redis (the outbox) and S3: a content deleted right after such an answer still has
// its completion's event published, before the deletion's.
import { Readable } from 'node:stream';
import { redisCommand } from '@cp/redis';
import { ContentFacts } from '../src/webhooks/ContentFacts';
import { eventIdOf } from '../src/webhooks/events';
import { Outbox, type Intent } from '../src/webhooks/Outbox';
import { SubscriberIndex } from '../src/webhooks/SubscriberIndex';
import { WebhookEvents } from '../src/webhooks/WebhookEvents';
import { WebhookStore } from '../src/webhooks/WebhookStore';
import { useRealStores, type RealStores } from './support/realStores';

describe('the events of completions a later request answers', () => {
  const owner = '1f0e0d0c-0b0a-4909-8807-060504030201';
  const P = 64 * 1024 * 1024;
  let outbox: Outbox;
  let hooks: WebhookStore;
  // Declared before the stores, so that it runs while their Redis connection is still open.
  afterAll(async () => {
    const keys = await redisCommand<string[]>(stores.redis, ['KEYS', `wh:${stores.namespace}:*`]);
    if (keys.length > 0) await redisCommand(stores.redis, ['DEL', ...keys]);
  });
  const stores = useRealStores('completion-events', () => new Date(), 60_000, {
    events: (s: RealStores) => {
      hooks = new WebhookStore(s.redis, s.namespace, 3);
      outbox = new Outbox(s.redis, hooks.keys);
      const facts = new ContentFacts(s.objects, s.book);
      // The dispatcher's check comes a minute after an intent: later than anything in this test.
      const options = { checkDelayMs: 60_000, checkFact: (intent: Intent) => facts.check(intent) };
      return new WebhookEvents(outbox, new SubscriberIndex(hooks), s.logger, options);
    },
  });

  beforeAll(async () => {
    await hooks.create(owner, 'https://hooks.example/receive', ['content.completed', 'content.deleted'], new Date());
  });

  const put = (contentId: string | null, start: number, bytes: Buffer, total: number) =>
    stores.uploads.write({
      ownerId: owner,
      contentId,
      range: { start, end: start + bytes.length - 1, total },
      declaredLength: bytes.length,
      contentType: null,
      body: Readable.from([bytes]),
    });

  /** The events published since the last look (each delivery due, whatever its time, taken away). */
  async function published(): Promise<string[]> {
    const due = await outbox.claimDeliveries(Date.now() + 3_600_000, 1, 100);
    for (const d of due) await outbox.settle(d.id);
    return due.map((d) => d.event).sort();
  }

  it('publishes the completion of a content deleted before the check of a completion whose holder died', async () => {
    const total = P + 10;
    const head = Buffer.alloc(P, 5);
    const created = await put(null, P, Buffer.alloc(10, 6), total);
    const { objects } = stores;
    const complete = objects.completeMultipartUpload.bind(objects);
    // S3 completes the content; its holder dies before it answers or publishes anything.
    objects.completeMultipartUpload = async (...args) => {
      await complete(...args);
      throw new Error('the process died');
    };
    try {
      await expect(put(created.id, 0, head, total)).rejects.toThrow('the process died');
    } finally {
      delete (objects as Partial<typeof objects>).completeMultipartUpload;
    }
    // The retries find the content completed: the second is answered "completed".
    await expect(put(created.id, 0, head, total)).rejects.toMatchObject({ status: 503, code: 'contentCompleting' });
    expect((await put(created.id, 0, head, total)).completed).toBe(true);
    // Its client deletes it at once, long before the dispatcher would look at the completion.
    await stores.uploads.remove(owner, created.id);
    expect(await published()).toEqual(
      [eventIdOf('content.completed', created.id), eventIdOf('content.deleted', created.id)].sort(),
    );
  });

  it('publishes, before the deletion, the completion of a one-shot content whose publication failed', async () => {
    const bytes = Buffer.alloc(1000, 7);
    const publish = outbox.publish.bind(outbox);
    // Redis fails the publication (after the intent was written): the client is told "stored" all the same.
    outbox.publish = async () => {
      throw new Error('redis went away');
    };
    let id: string;
    try {
      const created = await stores.uploads.write({
        ownerId: owner,
        contentId: null,
        range: { start: 0, end: bytes.length - 1, total: bytes.length },
        declaredLength: bytes.length,
        contentType: null,
        body: Readable.from([bytes]),
      });
      expect(created.completed).toBe(true);
      id = created.id;
    } finally {
      outbox.publish = publish;
    }
    expect(await published()).toEqual([]);
    await stores.uploads.remove(owner, id);
    expect(await published()).toEqual([eventIdOf('content.completed', id), eventIdOf('content.deleted', id)].sort());
  });
});
