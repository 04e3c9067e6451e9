import { signWebhook, verifyWebhookSignature, WEBHOOK_HEADERS } from '@cp/protocol';

describe('webhook signatures', () => {
  const secret = 'whsec_test-secret';
  const body = '{"id":"e1","type":"content.completed"}';
  const now = 1_800_000_000;
  const headersAt = (ts: number, b: string = body) => ({
    [WEBHOOK_HEADERS.timestamp.toLowerCase()]: String(ts),
    [WEBHOOK_HEADERS.signature.toLowerCase()]: signWebhook(secret, ts, b),
  });

  it('signs timestamp.body with HMAC-SHA256 as v1=<hex>', () => {
    const { createHmac } = jest.requireActual<typeof import('node:crypto')>('node:crypto');
    const expected = createHmac('sha256', secret).update(`${now}.${body}`).digest('hex');
    expect(signWebhook(secret, now, body)).toBe(`v1=${expected}`);
  });

  it('accepts its own signature within the tolerance', () => {
    expect(verifyWebhookSignature(secret, headersAt(now - 299), body, 300, now)).toBe(true);
    expect(verifyWebhookSignature(secret, headersAt(now + 299), Buffer.from(body), 300, now)).toBe(true);
  });

  it('refuses a timestamp outside the tolerance (a replay)', () => {
    expect(verifyWebhookSignature(secret, headersAt(now - 301), body, 300, now)).toBe(false);
  });

  it('refuses a tampered body, another secret, or missing headers', () => {
    expect(verifyWebhookSignature(secret, headersAt(now), body.replace('e1', 'e2'), 300, now)).toBe(false);
    expect(verifyWebhookSignature('whsec_other', headersAt(now), body, 300, now)).toBe(false);
    expect(verifyWebhookSignature(secret, {}, body, 300, now)).toBe(false);
    expect(verifyWebhookSignature(secret, { 'webhook-timestamp': 'x', 'webhook-signature': 'v1=00' }, body)).toBe(
      false,
    );
  });

  it('accepts any one of several signatures, and fetch-style Headers', () => {
    const h = headersAt(now);
    const several = `v1=deadbeef ${h['webhook-signature']}`;
    const fetchHeaders = new Headers({ 'Webhook-Timestamp': String(now), 'Webhook-Signature': several });
    expect(verifyWebhookSignature(secret, fetchHeaders, body, 300, now)).toBe(true);
  });
});
