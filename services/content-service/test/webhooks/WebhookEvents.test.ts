import { createLogger } from '@cp/logging';
import { ownerGroup } from '../../src/webhooks/keys';
import type { Intent, Outbox } from '../../src/webhooks/Outbox';
import { SubscriberIndex } from '../../src/webhooks/SubscriberIndex';
import { WebhookEvents } from '../../src/webhooks/WebhookEvents';

/** An outbox that records what it is asked (pure logic: which calls an event makes). */
function recordingOutbox() {
  const calls: string[] = [];
  const outbox = {
    intend: async (intent: Intent) => (calls.push(`intend ${intent.id}`), true),
    publish: async (event: { id: string }) => (calls.push(`publish ${event.id}`), 1),
  } as unknown as Outbox;
  return { calls, outbox };
}

describe('the events of facts', () => {
  const logger = createLogger({ service: 'test', level: 'silent' });
  const withOwner = 'f1b0c7a4-3c0e-4b8e-9a51-6c0f3f1d2e10';
  /** An index that knows `groups`, or (null) one never refreshed. */
  const index = async (groups: string[] | null) => {
    const i = new SubscriberIndex({ groupsInUse: async () => new Set(groups ?? []) });
    if (groups !== null) await i.refresh();
    return i;
  };

  it('asks nothing of Redis for an owner in no group with webhooks', async () => {
    const { calls, outbox } = recordingOutbox();
    const loaded = await index([ownerGroup(withOwner)]);
    const events = new WebhookEvents(outbox, loaded, logger, { checkDelayMs: 1000 });
    const other = [...Array(50)].map((_, i) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`);
    const outside = other.find((o) => ownerGroup(o) !== ownerGroup(withOwner))!;
    const intent = await events.intend('content.completed', outside, { id: 'c1' });
    await events.publish(intent);
    expect(intent).toBeNull();
    expect(calls).toEqual([]);
  });

  it('writes the intent and publishes it for an owner that may have webhooks, and before the index is known', async () => {
    const { calls, outbox } = recordingOutbox();
    const loaded = await index([ownerGroup(withOwner)]);
    let woken = 0;
    const events = new WebhookEvents(outbox, loaded, logger, { checkDelayMs: 1000, onPublished: () => woken++ });
    const intent = await events.intend('content.deleted', withOwner, { id: 'c2' });
    await events.publish(intent);
    expect(calls).toEqual([`intend ${intent!.id}`, `publish ${intent!.id}`]);
    expect(woken).toBe(1);
    const unknown = new WebhookEvents(outbox, await index(null), logger, { checkDelayMs: 1000 });
    expect(await unknown.intend('content.deleted', 'anyone', { id: 'c3' })).not.toBeNull();
  });

  it('never fails a request whose fact happened when the publication fails', async () => {
    const outbox = {
      intend: async () => true,
      publish: async () => {
        throw new Error('redis is not connected');
      },
    } as unknown as Outbox;
    const events = new WebhookEvents(outbox, await index(null), logger, { checkDelayMs: 1000 });
    const intent = await events.intend('content.completed', withOwner, { id: 'c4' });
    await expect(events.publish(intent)).resolves.toBeUndefined();
  });
});
