// The webhook outbox against the real Redis, as the content-service's Redis user (the ACL of
// deploy/compose.yaml): publication once per event id, claims that come back after a dead
// dispatcher's lease and are renewed while a live one works, retries that keep the event id, and
// the give-up after the retry window, with a clock the test moves.
import { randomBytes, randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLogger } from '@cp/logging';
import { verifyWebhookSignature } from '@cp/protocol';
import { redisCommand } from '@cp/redis';
import { Registry } from 'prom-client';
import { connectAsServiceUser } from '../../../test-e2e/support/redisAcl';
import { testStack } from '../../../test-e2e/support/stack';
import { eventIdOf, type FactSeen } from '../src/webhooks/events';
import { ownerGroup } from '../src/webhooks/keys';
import { Outbox, type Intent } from '../src/webhooks/Outbox';
import { SecretBox } from '../src/webhooks/SecretBox';
import { SubscriberIndex } from '../src/webhooks/SubscriberIndex';
import { WebhookDispatcher } from '../src/webhooks/WebhookDispatcher';
import { WebhookEvents } from '../src/webhooks/WebhookEvents';
import { WebhookStore } from '../src/webhooks/WebhookStore';

const HOUR = 3_600_000;
const logger = createLogger({ service: 'test', level: 'silent' });

interface Received {
  headers: IncomingHttpHeaders;
  body: string;
}

describe('the webhook outbox in Redis', () => {
  let user: Awaited<ReturnType<typeof connectAsServiceUser>>;
  let server: Server;
  let url: string;
  const received: Received[] = [];
  /** The statuses the receiver answers, one per request, then 200. */
  let answers: number[] = [];
  /** How long the receiver waits before it answers. */
  let holdMs = 0;

  beforeAll(async () => {
    user = await connectAsServiceUser(testStack().backing.REDIS_URL, 'content-service');
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        received.push({ headers: req.headers, body: Buffer.concat(chunks).toString() });
        res.statusCode = answers.shift() ?? 200;
        setTimeout(() => res.end(), holdMs);
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  });
  afterAll(async () => {
    await user?.close();
    await new Promise((r) => server?.close(r));
  });
  beforeEach(() => {
    received.length = 0;
    answers = [];
    holdMs = 0;
  });

  /** A namespace of its own, an owner with one webhook, and a dispatcher on a clock the test moves. */
  async function setup(
    options: {
      windowMs?: number;
      facts?: (i: Intent) => Promise<FactSeen>;
      /** The keys the webhook's secret is sealed with, and those the dispatcher has. */
      keys?: { sealed: string[]; dispatcher: string[] };
      leaseMs?: number;
      /** The dispatcher on the real clock, not the one the test moves. */
      realClock?: boolean;
    } = {},
  ) {
    const ns = `wht-${randomBytes(4).toString('hex')}`;
    const store = new WebhookStore(user.client, ns, 3, new SecretBox(options.keys?.dispatcher ?? []));
    const outbox = new Outbox(user.client, store.keys);
    const index = new SubscriberIndex(store);
    const owner = randomUUID();
    const maker = new WebhookStore(user.client, ns, 3, new SecretBox(options.keys?.sealed ?? []));
    const hook = await maker.create(owner, url, ['content.completed', 'content.deleted'], new Date());
    const clock = { now: Date.now() };
    const registry = new Registry();
    const dispatcher = new WebhookDispatcher(
      outbox,
      store,
      index,
      options.facts ?? (async () => ({ happened: false })),
      logger,
      {
        pollMs: 60_000,
        batchSize: 10,
        concurrency: 2,
        timeoutMs: 2_000,
        leaseMs: options.leaseMs ?? 30_000,
        retry: { firstMs: 10_000, capMs: HOUR, windowMs: options.windowMs ?? 24 * HOUR },
        intentWindowMs: HOUR,
        checkDelayMs: 60_000,
        policy: { allowHttp: true, allowPrivate: true, maxLength: 2048 },
        clock: options.realClock ? Date.now : () => clock.now,
      },
      registry,
    );
    const events = new WebhookEvents(outbox, index, logger, { checkDelayMs: 60_000, clock: () => clock.now });
    return { ns, store, outbox, index, owner, hook, clock, dispatcher, events, registry };
  }

  it('publishes an event once: a second publication and a late intent of the same fact add nothing', async () => {
    const { outbox, owner, clock, events } = await setup();
    const content = randomUUID();
    const intent = await events.intend('content.completed', owner, { id: content, size: 5 });
    expect(intent?.id).toBe(eventIdOf('content.completed', content));
    await events.publish(intent);
    await events.publish(intent);
    expect(await events.intend('content.completed', owner, { id: content })).toBeNull();
    expect(await events.intend('content.expired', owner, { id: content })).toBeNull(); // not subscribed
    const due = await outbox.claimDeliveries(clock.now, 30_000, 10);
    expect(due.map((d) => d.event)).toEqual([intent!.id]);
    expect(await outbox.claimIntents(clock.now + HOUR, 30_000, 10)).toEqual([]); // the intent went with it
  });

  it("returns a dead dispatcher's claim when its lease runs out, not before", async () => {
    const { outbox, owner, clock, events } = await setup();
    await events.publish(await events.intend('content.deleted', owner, { id: randomUUID() }));
    const [claimed] = await outbox.claimDeliveries(clock.now, 30_000, 10);
    expect(claimed).toBeDefined();
    expect(await outbox.claimDeliveries(clock.now + 29_000, 30_000, 10)).toEqual([]);
    const again = await outbox.claimDeliveries(clock.now + 30_001, 30_000, 10);
    expect(again.map((d) => d.id)).toEqual([claimed!.id]);
  });

  it('renews only the claims whose score is still the one their claim gave them', async () => {
    const { outbox, owner, clock, events } = await setup();
    for (let i = 0; i < 2; i++)
      await events.publish(await events.intend('content.deleted', owner, { id: randomUUID() }));
    const [a, b] = await outbox.claimDeliveries(clock.now, 30_000, 10);
    await outbox.retry({ ...b!, failures: 1 }, clock.now + 5_000); // b's outcome is written
    const held = [a!.id, b!.id].map((id) => [id, clock.now + 30_000] as const);
    expect(await outbox.renewClaims('deliveries', held, clock.now + 60_000)).toEqual([a!.id]);
    // a is held to +60 s; b is due at +5 s as its retry said, not held to +60 s.
    const later = await outbox.claimDeliveries(clock.now + 50_000, 30_000, 10);
    expect(later.map((d) => d.id)).toEqual([b!.id]);
    expect(await outbox.renewClaims('deliveries', [[a!.id, clock.now + 30_000]], clock.now + 90_000)).toEqual([]);
  });

  it("keeps a live round's claim while its delivery takes longer than the lease", async () => {
    const { outbox, owner, dispatcher, events } = await setup({ leaseMs: 600, realClock: true });
    await events.publish(await events.intend('content.completed', owner, { id: randomUUID() }));
    holdMs = 1_900; // three leases, within the delivery's timeout of 2 s
    const round = dispatcher.runOnce();
    for (let i = 0; i < 3; i++) {
      await sleep(600);
      expect(await outbox.claimDeliveries(Date.now(), 600, 10)).toEqual([]); // no other dispatcher gets it
    }
    await round;
    expect(received).toHaveLength(1);
    expect(await outbox.pending()).toBe(0);
  });

  it('measures how long the earliest delivery and intent have been due with no dispatcher claiming them', async () => {
    const { outbox, owner, clock, dispatcher, events, registry } = await setup();
    expect(await outbox.levels(clock.now)).toEqual({ pending: 0, deliveryOverdueMs: 0, intentOverdueMs: 0 });
    await events.publish(await events.intend('content.deleted', owner, { id: randomUUID() }));
    await events.intend('content.completed', owner, { id: randomUUID() }); // its writer never publishes
    expect(await outbox.levels(clock.now + 90_000)).toEqual({
      pending: 1,
      deliveryOverdueMs: 90_000,
      intentOverdueMs: 30_000, // checked 60 s after it was written
    });
    clock.now += 90_000;
    await dispatcher.measure();
    const gauges = await registry.getSingleMetricAsString('webhook_outbox_overdue_seconds');
    expect(gauges).toMatch(/queue="deliveries"} 90$/m);
    expect(gauges).toMatch(/queue="intents"} 30$/m);
    // Claimed: not overdue while its lease runs, overdue again once it ran out with no settlement.
    await outbox.claimDeliveries(clock.now, 30_000, 10);
    expect((await outbox.levels(clock.now + 10_000)).deliveryOverdueMs).toBe(0);
    expect((await outbox.levels(clock.now + 45_000)).deliveryOverdueMs).toBe(15_000);
  });

  it('retries a failed delivery with backoff, with the same event id and body, until acknowledged', async () => {
    const { owner, hook, clock, dispatcher, events, registry } = await setup();
    const intent = await events.intend('content.completed', owner, { id: randomUUID(), size: 1 });
    await events.publish(intent);
    answers = [500, 503];
    await dispatcher.runOnce();
    await dispatcher.runOnce(); // not due yet: nothing sent
    expect(received).toHaveLength(1);
    clock.now += 11_000;
    await dispatcher.runOnce();
    clock.now += 22_000;
    await dispatcher.runOnce();
    clock.now += HOUR;
    await dispatcher.runOnce(); // acknowledged before: nothing more
    expect(received.map((r) => r.headers['webhook-id'])).toEqual([intent!.id, intent!.id, intent!.id]);
    expect(new Set(received.map((r) => r.body)).size).toBe(1);
    // Each attempt is signed anew with its own timestamp, each signature valid at the time it was sent.
    for (const r of received) {
      const sentAt = Number(r.headers['webhook-timestamp']);
      expect(verifyWebhookSignature(hook.secret, r.headers, r.body, 300, sentAt)).toBe(true);
      expect(verifyWebhookSignature('whsec_wrong', r.headers, r.body, 300, sentAt)).toBe(false);
    }
    const last = received[2]!;
    expect(JSON.parse(last.body)).toMatchObject({ id: intent!.id, type: 'content.completed', owner });
    expect(await registry.getSingleMetricAsString('webhook_deliveries_total')).toMatch(/outcome="delivered"} 1/);
    expect(await registry.getSingleMetricAsString('webhook_deliveries_pending')).toMatch(/ 0$/m);
  });

  it('holds back a delivery whose secret opens under no key; the key put back opens it again', async () => {
    const [gone, current] = [randomBytes(32).toString('base64url'), randomBytes(32).toString('base64url')];
    const { ns, outbox, owner, hook, clock, dispatcher, events, registry } = await setup({
      keys: { sealed: [gone], dispatcher: [current] },
    });
    await events.publish(await events.intend('content.completed', owner, { id: randomUUID() }));
    await dispatcher.runOnce();
    expect(received).toHaveLength(0);
    expect(await outbox.pending()).toBe(1);
    expect(await registry.getSingleMetricAsString('webhook_deliveries_total')).toMatch(/outcome="failed"} 1/);
    // The key put back (second in the list): the retry is signed with the webhook's own secret.
    const back = new WebhookStore(user.client, ns, 3, new SecretBox([current, gone]));
    const [due] = await outbox.claimDeliveries(clock.now + HOUR, 30_000, 10);
    expect((await back.find(owner, due!.webhook))?.secret).toBe(hook.secret);
  });

  it('gives a delivery up once its retry window is over', async () => {
    const { outbox, owner, clock, dispatcher, events, registry } = await setup({ windowMs: 24 * HOUR });
    await events.publish(await events.intend('content.completed', owner, { id: randomUUID() }));
    answers = Array<number>(100).fill(500);
    const start = clock.now;
    for (let i = 0; i < 60 && clock.now - start < 26 * HOUR; i++) {
      await dispatcher.runOnce();
      clock.now += HOUR + 10 * 60_000; // past any wait (the cap is 1 h plus jitter)
    }
    expect(received.length).toBeGreaterThan(10);
    expect(received.length).toBeLessThan(30);
    expect(await outbox.pending()).toBe(0);
    expect(await registry.getSingleMetricAsString('webhook_deliveries_total')).toMatch(/outcome="given_up"} 1/);
  });

  it('publishes an intent its writer never published once the fact is seen, and drops one whose fact never came', async () => {
    const happened = randomUUID();
    const never = randomUUID();
    const { owner, clock, dispatcher, events } = await setup({
      facts: async (i) => (i.content.id === happened ? { happened: true, content: { size: 42 } } : { happened: false }),
    });
    const a = await events.intend('content.completed', owner, { id: happened });
    await events.intend('content.completed', owner, { id: never });
    await dispatcher.runOnce(); // not yet at their check time
    expect(received).toHaveLength(0);
    clock.now += 61_000;
    await dispatcher.runOnce();
    await dispatcher.runOnce();
    expect(received.map((r) => r.headers['webhook-id'])).toEqual([a!.id]);
    expect(JSON.parse(received[0]!.body).content).toEqual({ id: happened, size: 42 });
    clock.now += 2 * HOUR;
    await dispatcher.runOnce(); // the other is dropped after the intent window
    clock.now += 2 * HOUR;
    await dispatcher.runOnce();
    expect(received).toHaveLength(1);
  });

  it('bounds the webhooks per owner, lists them without secrets, and knows the owner groups in use', async () => {
    const { store, index, owner, hook } = await setup();
    await store.create(owner, url, ['content.expired'], new Date());
    await store.create(owner, url, ['content.expired'], new Date());
    await expect(store.create(owner, url, ['content.expired'], new Date())).rejects.toThrow(/has 3 webhooks/);
    const listed = await store.list(owner);
    expect(listed).toHaveLength(3);
    expect(JSON.stringify(listed)).not.toContain(hook.secret);
    expect(await store.list(randomUUID())).toEqual([]);
    expect(await store.remove(randomUUID(), hook.id)).toBe(false); // another owner's: unknown
    await index.refresh();
    expect(index.mayHaveWebhooks(owner)).toBe(true);
    for (const h of listed) expect(await store.remove(owner, h.id)).toBe(true);
    expect((await store.groupsInUse()).has(ownerGroup(owner))).toBe(false);
    expect(await redisCommand(user.client, ['EXISTS', store.keys.hooks(owner)])).toBe(0);
  });
});
