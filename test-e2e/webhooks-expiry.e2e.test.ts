// content.expired: an unfinished upload left without writes past UPLOAD_TTL_SECONDS is removed by
// the sweeper, and its owner's webhook gets the event once, signed. A content-service (1 s time to
// live, a sweep every second) and gateway of their own, on a bucket of their own.
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { verifyWebhookSignature } from '@cp/protocol';
import { call, rangeOf } from './support/http';
import { contentReplicaEnv, type ServiceHandle, startGatewayFor, startService } from './support/replicas';
import { testStack } from './support/stack';
import { registerOwner, WebhookReceiver } from './support/webhookReceiver';

describe('the webhook of an expired upload', () => {
  const started: ServiceHandle[] = [];
  const logDir = join(testStack().logDir, 'webhooks-expiry');
  const receiver = new WebhookReceiver();
  let gateway: ServiceHandle;

  beforeAll(async () => {
    const content = await startService('content-service', {
      env: contentReplicaEnv({
        S3_BUCKET: `${testStack().prefix}-hooks-expiry`,
        UPLOAD_TTL_SECONDS: '1',
        SWEEP_INTERVAL_SECONDS: '1',
        WEBHOOK_ALLOW_HTTP: 'true',
        WEBHOOK_ALLOW_PRIVATE: 'true',
        WEBHOOK_POLL_SECONDS: '1',
      }),
      logDir,
    });
    started.push(content);
    gateway = await startGatewayFor(content.url, logDir, started);
  }, 120_000);

  afterAll(async () => {
    await Promise.all(started.map((s) => s.stop('SIGKILL')));
    await receiver.stop();
  });

  it('delivers content.expired once, signed, after the sweeper removed the upload', async () => {
    const url = await receiver.start();
    const { owner, token, hook } = await registerOwner(gateway.url, url, ['content.expired']);
    const { secret } = hook;
    const begun = await call(`${gateway.url}/v1/${owner}/contents`, {
      method: 'POST',
      token,
      body: randomBytes(10),
      headers: { 'content-range': rangeOf(0, 10, 30) },
    });
    expect(begun.status).toBe(201);
    const id = begun.json().id as string;
    await receiver.until(() => receiver.about(id, 'content.expired').length > 0, 30_000);
    expect((await call(`${gateway.url}/v1/${owner}/contents/${id}`, { method: 'HEAD', token })).status).toBe(404);
    await sleep(2_500);
    const delivered = receiver.about(id, 'content.expired');
    expect(delivered).toHaveLength(1);
    expect(verifyWebhookSignature(secret, delivered[0]!.headers, delivered[0]!.body, 300)).toBe(true);
    expect(JSON.parse(delivered[0]!.body)).toMatchObject({ type: 'content.expired', owner, content: { id, size: 30 } });
  });
});
