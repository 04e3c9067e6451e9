import type { Logger } from '@cp/logging';
import type { Redis } from '@cp/redis';
import type { Registry } from 'prom-client';
import type { ObjectStore } from '../store/ObjectStore';
import type { UploadBook } from '../store/UploadBook';
import type { ContentEvents } from '../uploads/UploadContext';
import { ContentFacts } from './ContentFacts';
import { Outbox } from './Outbox';
import { SecretBox } from './SecretBox';
import type { WebhookSettings } from './settings';
import { SubscriberIndex } from './SubscriberIndex';
import type { UrlPolicy } from './urlPolicy';
import { WebhookDispatcher } from './WebhookDispatcher';
import { WebhookEvents } from './WebhookEvents';
import { WebhookStore } from './WebhookStore';

/** How soon the claims of a dispatcher that died come back to the others (or to its restart). */
export const WEBHOOK_CLAIM_LEASE_MS = 10_000;

export interface Webhooks {
  store: WebhookStore;
  index: SubscriberIndex;
  policy: UrlPolicy;
  events: ContentEvents;
  dispatcher: WebhookDispatcher;
}

/**
 * The webhooks of a content-service replica: the owners' subscriptions and the outbox in Redis
 * (`wh:<bucket>:*`), the events its uploads record with their facts, and its dispatcher (started
 * here, stopped at shutdown).
 */
export function startWebhooks(deps: {
  /** The webhook settings, and the bucket whose name the keys in Redis carry (`wh:<bucket>:*`). */
  config: WebhookSettings & { S3_BUCKET: string };
  redis: Redis;
  objects: ObjectStore;
  book: UploadBook;
  logger: Logger;
  registry: Registry;
}): Webhooks {
  const { config: c, redis, logger } = deps;
  const box = new SecretBox(c.WEBHOOK_SECRET_KEYS);
  const store = new WebhookStore(redis, c.S3_BUCKET, c.WEBHOOKS_PER_OWNER, box);
  if (!box.sealing) logger.warn('webhook secrets are kept in Redis as they are: set WEBHOOK_SECRET_KEYS to seal them');
  else resealInBackground(store, box, logger);
  const index = new SubscriberIndex(store);
  const outbox = new Outbox(redis, store.keys);
  const policy: UrlPolicy = {
    allowHttp: c.WEBHOOK_ALLOW_HTTP,
    allowPrivate: c.WEBHOOK_ALLOW_PRIVATE,
    maxLength: c.WEBHOOK_URL_MAX_LENGTH,
  };
  const facts = new ContentFacts(deps.objects, deps.book);
  const dispatcher = new WebhookDispatcher(
    outbox,
    store,
    index,
    (intent) => facts.check(intent),
    logger,
    {
      pollMs: c.WEBHOOK_POLL_SECONDS * 1000,
      batchSize: c.WEBHOOK_BATCH_SIZE,
      concurrency: c.WEBHOOK_CONCURRENCY,
      timeoutMs: c.WEBHOOK_TIMEOUT_SECONDS * 1000,
      // Renewed while a round holds it: a killed dispatcher's deliveries are sent again this soon.
      leaseMs: WEBHOOK_CLAIM_LEASE_MS,
      retry: {
        firstMs: c.WEBHOOK_RETRY_FIRST_SECONDS * 1000,
        capMs: c.WEBHOOK_RETRY_MAX_SECONDS * 1000,
        windowMs: c.WEBHOOK_RETRY_WINDOW_SECONDS * 1000,
      },
      intentWindowMs: c.WEBHOOK_INTENT_WINDOW_SECONDS * 1000,
      checkDelayMs: c.WEBHOOK_CHECK_SECONDS * 1000,
      policy,
    },
    deps.registry,
  );
  const events = new WebhookEvents(outbox, index, logger, {
    checkDelayMs: c.WEBHOOK_CHECK_SECONDS * 1000,
    onPublished: () => dispatcher.wake(),
    checkFact: (intent) => facts.check(intent),
  });
  dispatcher.start();
  return { store, index, policy, events, dispatcher };
}

/**
 * Seals, once at start-up and off every request's path, the secrets not sealed under the current
 * key; says what it did, so that an operator knows when an older key may go.
 */
function resealInBackground(store: WebhookStore, box: SecretBox, logger: Logger): void {
  store.resealAll().then(
    (report) => {
      const fields = { ...report, key: box.currentKeyId };
      if (report.unreadable === 0) logger.info(fields, 'every webhook secret is sealed under the current key');
      else logger.error(fields, 'some webhook secrets open under no key of WEBHOOK_SECRET_KEYS; their deliveries wait');
    },
    (error: unknown) =>
      logger.warn({ err: error }, 'could not seal the webhook secrets anew; the next start tries again'),
  );
}
