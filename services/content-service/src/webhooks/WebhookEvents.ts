import type { Logger } from '@cp/logging';
import { currentTraceparent } from '@cp/tracing';
import { eventIdOf, type EventContent, type EventType, type FactSeen, type WebhookEvent } from './events';
import type { Intent, Outbox } from './Outbox';
import type { SubscriberIndex } from './SubscriberIndex';

export interface WebhookEventsOptions {
  /** When an intent whose writer never published is first looked at (its fact checked). */
  checkDelayMs: number;
  clock?: () => number;
  /** Called after each publication that made deliveries (the local dispatcher's wake-up). */
  onPublished?: () => void;
  /** Whether an intent's fact happened, as the dispatcher checks it (for `settle`; nothing is settled without it). */
  checkFact?: (intent: Intent) => Promise<FactSeen>;
}

/**
 * The events of facts, for the code that makes them: `intend` before the fact (fails, and the
 * fact must not happen, when the intent cannot be written), `publish` after it (never fails: an
 * unpublished intent is published by the dispatcher's check of the fact).
 */
export class WebhookEvents {
  private readonly clock: () => number;

  constructor(
    private readonly outbox: Outbox,
    private readonly index: SubscriberIndex,
    private readonly logger: Logger,
    private readonly options: WebhookEventsOptions,
  ) {
    this.clock = options.clock ?? Date.now;
  }

  /** The intent of `type` for a content, recorded; null when the owner has no webhook for it (nothing to publish). */
  async intend(type: EventType, owner: string, content: EventContent): Promise<Intent | null> {
    if (!this.index.mayHaveWebhooks(owner)) return null;
    const now = this.clock();
    // The request's trace, kept with the intent: the deliveries of its event continue it.
    const trace = currentTraceparent();
    const intent: Intent = {
      id: eventIdOf(type, content.id),
      type,
      owner,
      content,
      at: now,
      ...(trace ? { trace } : {}),
    };
    return (await this.outbox.intend(intent, now + this.options.checkDelayMs)) ? intent : null;
  }

  /** Publishes the event of an intent whose fact happened. */
  async publish(intent: Intent | null): Promise<void> {
    if (!intent) return;
    const now = this.clock();
    const event = eventOf(intent, {}, now);
    try {
      if ((await this.outbox.publish(event, now, intent.trace)) > 0) this.options.onPublished?.();
    } catch (error) {
      this.logger.warn(
        { eventId: intent.id, err: error },
        'could not publish an event; its intent is published when its fact is checked',
      );
    }
  }

  /**
   * Publishes now the event of a fact whose intent is still waiting (its writer died, or could
   * not publish), when the fact has happened. Called before a later fact would hide it: a
   * content deleted before the dispatcher checked its completion would have that completion's
   * event dropped as "never happened", although its client was told it completed. Throws when
   * Redis or the check fails (the later fact must then wait).
   */
  async settle(type: EventType, owner: string, contentId: string): Promise<void> {
    const check = this.options.checkFact;
    if (!check || !this.index.mayHaveWebhooks(owner)) return;
    const intent = await this.outbox.pendingIntent(eventIdOf(type, contentId));
    if (!intent) return;
    const seen = await check(intent);
    if (!seen.happened) return;
    const now = this.clock();
    if ((await this.outbox.publish(eventOf(intent, seen.content, now), now, intent.trace)) > 0)
      this.options.onPublished?.();
    this.logger.info({ eventId: intent.id, type }, 'an unpublished event was published before a later fact');
  }
}

export function eventOf(intent: Intent, content: Partial<EventContent>, now: number): WebhookEvent {
  const merged: EventContent = { ...intent.content };
  for (const [name, value] of Object.entries(content))
    if (value !== undefined && value !== null) (merged as unknown as Record<string, unknown>)[name] = value;
  return {
    id: intent.id,
    type: intent.type,
    'occurred-at': new Date(now).toISOString(),
    owner: intent.owner,
    content: merged,
  };
}
