import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * How a webhook delivery is signed: `Webhook-Signature: v1=<hex>`, the HMAC-SHA256 with the
 * webhook's secret over `<Webhook-Timestamp>.<body>` (the timestamp in Unix seconds, the body as
 * sent). The timestamp is signed so that a captured delivery cannot be replayed later than the
 * receiver's tolerance.
 */
export const WEBHOOK_HEADERS = {
  /** The event's id: the same on every retry of the same event. */
  id: 'Webhook-Id',
  /** When this attempt was signed, in Unix seconds. */
  timestamp: 'Webhook-Timestamp',
  /** `v1=<hex>`; a receiver accepts any one of several space-separated signatures. */
  signature: 'Webhook-Signature',
} as const;

/** The `Webhook-Signature` value of `body` sent at `timestamp` (Unix seconds). */
export function signWebhook(secret: string, timestamp: number, body: string | Buffer): string {
  const mac = createHmac('sha256', secret).update(`${timestamp}.`).update(body).digest('hex');
  return `v1=${mac}`;
}

/** Headers as Node gives them (lower-case names) or as a fetch `Headers`. */
export type WebhookHeaders = Record<string, string | string[] | undefined> | { get(name: string): string | null };

/**
 * Whether a delivery is genuine: its signature is the HMAC of its timestamp and body with
 * `secret`, and its timestamp is within `toleranceSeconds` of now. Pass the body exactly as
 * received (the raw bytes, not a re-serialised object).
 */
export function verifyWebhookSignature(
  secret: string,
  headers: WebhookHeaders,
  body: string | Buffer,
  toleranceSeconds = 300,
  nowSeconds = Math.floor(Date.now() / 1000),
): boolean {
  const timestampText = headerOf(headers, WEBHOOK_HEADERS.timestamp);
  const signatures = headerOf(headers, WEBHOOK_HEADERS.signature);
  if (!timestampText || !signatures || !/^\d{1,12}$/.test(timestampText)) return false;
  const timestamp = Number(timestampText);
  if (Math.abs(nowSeconds - timestamp) > toleranceSeconds) return false;
  const expected = Buffer.from(signWebhook(secret, timestamp, body));
  return signatures.split(/\s+/).some((candidate) => {
    const given = Buffer.from(candidate);
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}

function headerOf(headers: WebhookHeaders, name: string): string | null {
  if (typeof headers.get === 'function') return (headers as { get(n: string): string | null }).get(name);
  const value = (headers as Record<string, string | string[] | undefined>)[name.toLowerCase()];
  return Array.isArray(value) ? (value[0] ?? null) : (value ?? null);
}
