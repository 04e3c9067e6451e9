import type { Logger } from '@cp/logging';
import { signWebhook, WEBHOOK_HEADERS } from '@cp/protocol';
import { contextOf, endOutgoingCall, startOutgoingCall } from '@cp/tracing';
import { Counter, Gauge, type Registry } from 'prom-client';
import { retryDelayMs, type RetrySchedule } from './backoff';
import type { FactSeen } from './events';
import { postToReceiver } from './httpDelivery';
import type { Delivery, Intent, Outbox } from './Outbox';
import type { SubscriberIndex } from './SubscriberIndex';
import type { UrlPolicy } from './urlPolicy';
import { eventOf } from './WebhookEvents';
import { HeldClaims } from './HeldClaims';
import { SecretUnreadable } from './SecretBox';
import type { Webhook, WebhookStore } from './WebhookStore';

export interface WebhookDispatcherOptions {
  /** How often Redis is asked for due deliveries and intents (a publication here wakes it at once). */
  pollMs: number;
  /** Deliveries and intents claimed per round. */
  batchSize: number;
  /** Deliveries in flight at once. */
  concurrency: number;
  /** The limit of one delivery: connect, TLS, answer. */
  timeoutMs: number;
  /**
   * A claim's lease, renewed every third of it while the round works on the entry: a dispatcher
   * that dies holding a claim gives it back at most this long after.
   */
  leaseMs: number;
  retry: RetrySchedule;
  /** After this long an intent whose fact has not happened is dropped. */
  intentWindowMs: number;
  /** How often an intent whose fact may still happen is looked at again. */
  checkDelayMs: number;
  policy: UrlPolicy;
  clock?: () => number;
}

/**
 * Delivers published events and settles intents left unpublished, in every replica: claims due
 * deliveries (a lease, so a dead dispatcher's claims come back), POSTs each signed with its
 * webhook's secret, removes it on 2xx and otherwise retries it with capped exponential backoff
 * until the retry window has passed. Nothing here runs on a request's path.
 */
export class WebhookDispatcher {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private stopped = true;
  private again = false;
  private readonly clock: () => number;
  private readonly outcomes: Counter<'outcome'>;
  private readonly intents: Counter<'outcome'>;
  private readonly backlog: Gauge;
  private readonly overdue: Gauge<'queue'>;
  private gauger: NodeJS.Timeout | null = null;
  private gauging: Promise<void> | null = null;

  constructor(
    private readonly outbox: Outbox,
    private readonly store: WebhookStore,
    private readonly index: SubscriberIndex,
    private readonly checkFact: (intent: Intent) => Promise<FactSeen>,
    private readonly logger: Logger,
    private readonly options: WebhookDispatcherOptions,
    registry?: Registry,
  ) {
    this.clock = options.clock ?? Date.now;
    const registers = registry ? [registry] : [];
    this.outcomes = new Counter({
      name: 'webhook_deliveries_total',
      help: 'Webhook delivery attempts by outcome: delivered (2xx), failed (to be retried), given_up (retry window over), dropped (webhook deleted)',
      labelNames: ['outcome'],
      registers,
    });
    this.intents = new Counter({
      name: 'webhook_intents_checked_total',
      help: 'Intents left unpublished by their writer, checked against their fact: published, dropped (no fact), postponed',
      labelNames: ['outcome'],
      registers,
    });
    this.backlog = new Gauge({
      name: 'webhook_deliveries_pending',
      help: 'Deliveries waiting in the outbox (due, claimed or waiting for a retry), as last counted by this replica',
      registers,
    });
    this.overdue = new Gauge({
      name: 'webhook_outbox_overdue_seconds',
      help: 'How long the longest-overdue delivery (queue="deliveries") or unpublished intent (queue="intents") has been due with no dispatcher claiming it, as last measured by this replica; 0 when none is due',
      labelNames: ['queue'],
      registers,
    });
    for (const queue of ['deliveries', 'intents']) this.overdue.set({ queue }, 0);
  }

  start(): void {
    this.stopped = false;
    this.schedule(0);
    // Measured on a schedule of its own, not at the end of a round, so that a round that hangs
    // shows as an outbox growing overdue. One bounded Redis call each poll interval.
    this.gauger = setInterval(() => {
      this.gauging ??= this.measure().finally(() => {
        this.gauging = null;
      });
    }, this.options.pollMs);
    this.gauger.unref();
  }

  /** Refreshes the outbox's gauges (kept as they were when Redis does not answer). */
  async measure(): Promise<void> {
    try {
      const levels = await this.outbox.levels(this.clock());
      this.backlog.set(levels.pending);
      this.overdue.set({ queue: 'deliveries' }, levels.deliveryOverdueMs / 1000);
      this.overdue.set({ queue: 'intents' }, levels.intentOverdueMs / 1000);
    } catch (error) {
      this.logger.debug({ err: error }, 'could not measure the webhook outbox');
    }
  }

  /** Runs a round now (after a publication here), or right after the running one. */
  wake(): void {
    if (this.stopped) return;
    if (this.running) this.again = true;
    else this.schedule(0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.gauger) clearInterval(this.gauger);
    this.timer = null;
    this.gauger = null;
    await this.running;
    await this.gauging;
  }

  /** One round: the owner index refreshed, due intents settled, due deliveries sent. */
  async runOnce(): Promise<void> {
    await this.index.refresh().catch(() => undefined);
    const { leaseMs, batchSize } = this.options;
    const held = new HeldClaims(this.outbox, leaseMs, this.clock, this.logger);
    try {
      let at = this.clock();
      const intents = await this.outbox.claimIntents(at, leaseMs, batchSize);
      held.hold('intents', intents, at + leaseMs);
      for (const intent of intents) {
        await this.settleIntent(intent);
        held.release('intents', intent.id);
      }
      at = this.clock();
      const due = await this.outbox.claimDeliveries(at, leaseMs, batchSize);
      held.hold('deliveries', due, at + leaseMs);
      const queue = [...due];
      const worker = async () => {
        for (let d = queue.shift(); d; d = queue.shift()) {
          await this.deliver(d);
          held.release('deliveries', d.id);
        }
      };
      await Promise.all(Array.from({ length: Math.min(this.options.concurrency, due.length) }, worker));
      if (due.length === batchSize) this.again = true; // more may be due
    } finally {
      await held.stop();
    }
    await this.measure();
  }

  private schedule(ms: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.running = this.runOnce()
        .catch((error: unknown) =>
          this.logger.warn({ err: error }, 'webhook dispatch round failed; next round retries'),
        )
        .finally(() => {
          this.running = null;
          if (this.stopped) return;
          const soon = this.again;
          this.again = false;
          // Until the owner index is known (Redis not reached yet), every write asks Redis: try again soon.
          const poll = this.index.known ? this.options.pollMs : Math.min(this.options.pollMs, 1_000);
          this.schedule(soon ? 0 : poll);
        });
    }, ms);
    this.timer.unref();
  }

  private async settleIntent(intent: Intent): Promise<void> {
    try {
      const seen = await this.checkFact(intent);
      const now = this.clock();
      if (seen.happened) {
        await this.outbox.publish(eventOf(intent, seen.content, now), now, intent.trace);
        this.intents.inc({ outcome: 'published' });
        this.logger.info(
          { eventId: intent.id, type: intent.type },
          'an unpublished event was published after its fact',
        );
        this.again = true;
      } else if (now - intent.at > this.options.intentWindowMs) {
        await this.outbox.dropIntent(intent.id);
        this.intents.inc({ outcome: 'dropped' });
      } else {
        await this.outbox.postponeIntent(intent.id, now + this.options.checkDelayMs);
        this.intents.inc({ outcome: 'postponed' });
      }
    } catch (error) {
      // Its claim runs out and the next round looks again.
      this.logger.warn({ eventId: intent.id, err: error }, 'could not check the fact of an event');
    }
  }

  private async deliver(delivery: Delivery): Promise<void> {
    const log = { eventId: delivery.event, webhookId: delivery.webhook, attempt: delivery.failures + 1 };
    try {
      let hook: Webhook | null;
      try {
        hook = await this.store.find(delivery.owner, delivery.webhook);
      } catch (error) {
        // Its key was taken out of the list: retried (a key put back opens it) until the window ends.
        if (!(error instanceof SecretUnreadable)) throw error;
        this.logger.error({ ...log, err: error }, 'a webhook secret does not open; its delivery waits');
        return await this.failed(delivery, error.message, log);
      }
      if (!hook) {
        await this.outbox.settle(delivery.id);
        this.outcomes.inc({ outcome: 'dropped' });
        return;
      }
      const timestamp = Math.floor(this.clock() / 1000);
      // A span in the event's own trace (the request that made the fact), which the receiver may continue.
      const call = startOutgoingCall(
        'webhook delivery',
        { 'cp.event.id': delivery.event, 'cp.webhook.id': delivery.webhook, 'cp.delivery.attempt': log.attempt },
        contextOf(delivery.trace),
      );
      const traceHeaders = call?.headers ?? (delivery.trace ? { traceparent: delivery.trace } : {});
      let failure: string;
      try {
        const status = await postToReceiver(
          hook.url,
          {
            'Content-Type': 'application/json',
            'User-Agent': 'content-platform-webhooks/1',
            [WEBHOOK_HEADERS.id]: delivery.event,
            [WEBHOOK_HEADERS.timestamp]: String(timestamp),
            [WEBHOOK_HEADERS.signature]: signWebhook(hook.secret, timestamp, delivery.body),
            ...traceHeaders,
          },
          delivery.body,
          this.options.policy,
          this.options.timeoutMs,
        );
        endOutgoingCall(call, status);
        if (status >= 200 && status < 300) {
          await this.outbox.settle(delivery.id);
          this.outcomes.inc({ outcome: 'delivered' });
          return;
        }
        failure = `the receiver answered ${status}`;
      } catch (error) {
        endOutgoingCall(call, undefined, error);
        failure = (error as Error).message;
      }
      await this.failed(delivery, failure, log);
    } catch (error) {
      // Redis failed: the claim runs out and a later round tries again.
      this.logger.warn({ ...log, err: error }, 'could not record the outcome of a delivery');
    }
  }

  private async failed(delivery: Delivery, failure: string, log: Record<string, unknown>): Promise<void> {
    const now = this.clock();
    const failures = delivery.failures + 1;
    const next = now + retryDelayMs(failures, this.options.retry);
    if (next - delivery.first > this.options.retry.windowMs) {
      await this.outbox.settle(delivery.id);
      this.outcomes.inc({ outcome: 'given_up' });
      this.logger.warn({ ...log, failure }, 'a webhook delivery was given up: its retry window is over');
      return;
    }
    await this.outbox.retry({ ...delivery, failures }, next);
    this.outcomes.inc({ outcome: 'failed' });
    this.logger.info({ ...log, failure, retryAt: new Date(next).toISOString() }, 'a webhook delivery failed');
  }
}
