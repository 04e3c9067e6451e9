import { env, z } from '@cp/config';
import { SECRET_KEY_MIN_LENGTH } from './SecretBox';

/** Webhooks (docs/configuration.md#webhooks): who may be called, how often and for how long events are retried. */
export function webhookSettings() {
  return {
    /** Accept http:// receiver URLs (the local stack); production: https only. */
    WEBHOOK_ALLOW_HTTP: env.bool(false),
    /** Accept receivers on loopback, link-local, private and unique-local addresses (the local stack). */
    WEBHOOK_ALLOW_PRIVATE: env.bool(false),
    WEBHOOKS_PER_OWNER: z.coerce.number().int().min(1).max(100).default(10),
    WEBHOOK_URL_MAX_LENGTH: z.coerce.number().int().min(64).max(8192).default(2048),
    /** How often each replica asks Redis for due deliveries and intents (a publication wakes its own at once). */
    WEBHOOK_POLL_SECONDS: env.int(5, 1),
    /** One delivery's limit: connect, TLS and answer. */
    WEBHOOK_TIMEOUT_SECONDS: z.coerce.number().int().min(1).max(60).default(10),
    WEBHOOK_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(8),
    WEBHOOK_BATCH_SIZE: z.coerce.number().int().min(1).max(1000).default(50),
    /** The wait after a delivery's first failure, doubled after each further one up to WEBHOOK_RETRY_MAX_SECONDS. */
    WEBHOOK_RETRY_FIRST_SECONDS: env.int(10, 1),
    WEBHOOK_RETRY_MAX_SECONDS: env.int(3600, 1),
    /** A delivery is given up this long after its event was published: at least 24 h. */
    WEBHOOK_RETRY_WINDOW_SECONDS: env.int(72 * 3600, 24 * 3600),
    /** When the fact of an event its writer did not publish (it died) is first checked, and then again. */
    WEBHOOK_CHECK_SECONDS: env.int(60, 1),
    /** An intent whose fact is not seen within this long is dropped (longer than any request). */
    WEBHOOK_INTENT_WINDOW_SECONDS: env.int(3600, 60),
    /** Keys that seal webhook secrets in Redis, comma-separated, the current one first (SecretBox). */
    WEBHOOK_SECRET_KEYS: env.list().refine((keys) => keys.every((k) => k.length >= SECRET_KEY_MIN_LENGTH), {
      message: `each key must be at least ${SECRET_KEY_MIN_LENGTH} characters`,
    }),
  };
}

/** The webhook settings as parsed (a part of the content-service's configuration). */
export type WebhookSettings = z.output<z.ZodObject<ReturnType<typeof webhookSettings>>>;
