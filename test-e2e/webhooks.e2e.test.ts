// Webhooks through the gateway: registration and its refusals, each event delivered once per
// acknowledgement with a valid signature, retries that keep the event id, a slow receiver that
// slows no upload, and a content-service killed (kill -9) between a completion and its delivery.
// A content-service and gateway of its own, on a bucket of its own (so no other replica's
// dispatcher shares its outbox), with a receiver on 127.0.0.1 over http (allowed here by config).
import { randomBytes, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createLogger } from '@cp/logging';
import { verifyWebhookSignature } from '@cp/protocol';
import { closeRedis, connectRedis, redisCommand, redisReady } from '@cp/redis';
import { call, rangeOf } from './support/http';
import { contentReplicaEnv, freePort, type ServiceHandle, startGatewayFor, startService } from './support/replicas';
import { testStack, tokenFor } from './support/stack';
import { registerOwner, WebhookReceiver, type Delivered } from './support/webhookReceiver';

const HOOK_ENV = {
  WEBHOOK_ALLOW_HTTP: 'true',
  WEBHOOK_ALLOW_PRIVATE: 'true',
  WEBHOOK_POLL_SECONDS: '1',
  WEBHOOK_RETRY_FIRST_SECONDS: '1',
  WEBHOOK_RETRY_MAX_SECONDS: '2',
  WEBHOOK_CHECK_SECONDS: '2',
  WEBHOOKS_PER_OWNER: '3',
  WEBHOOK_SECRET_KEYS: randomBytes(32).toString('base64url'),
};

describe('webhooks', () => {
  const started: ServiceHandle[] = [];
  const logDir = join(testStack().logDir, 'webhooks');
  const bucket = `${testStack().prefix}-hooks`;
  const receiver = new WebhookReceiver();
  let receiverUrl: string;
  let contentPort: number;
  let content: ServiceHandle;
  let gateway: ServiceHandle;

  const startContent = async (env: Record<string, string> = {}) => {
    const handle = await startService('content-service', {
      port: contentPort,
      env: contentReplicaEnv({ S3_BUCKET: bucket, ...HOOK_ENV, ...env }),
      logDir,
    });
    started.push(handle);
    return handle;
  };
  const startGateway = (contentUrl: string) => startGatewayFor(contentUrl, logDir, started);

  beforeAll(async () => {
    receiverUrl = await receiver.start();
    contentPort = await freePort();
    content = await startContent();
    gateway = await startGateway(content.url);
  }, 120_000);

  afterAll(async () => {
    await Promise.all(started.map((s) => s.stop('SIGKILL')));
    await receiver.stop();
  });

  /** An owner with its token and one webhook to the receiver; the secret as answered at creation. */
  async function ownerWithHook(events = ['content.completed', 'content.deleted', 'content.expired']) {
    const registered = await registerOwner(gateway.url, receiverUrl, events);
    expect(registered.hook).toMatchObject({ url: receiverUrl, events });
    expect(registered.hook.secret).toMatch(/^whsec_/);
    return registered;
  }

  const contents = (owner: string, id?: string) => `${gateway.url}/v1/${owner}/contents${id ? `/${id}` : ''}`;

  /** A 20-byte content sent in two ranges (POST, then the PUT that completes it: 201); its id. */
  async function uploadInTwo(owner: string, token: string): Promise<string> {
    const bytes = randomBytes(20);
    const first = await call(contents(owner), {
      method: 'POST',
      token,
      body: bytes.subarray(0, 10),
      headers: { 'content-range': rangeOf(0, 10, 20) },
    });
    const id = first.json().id as string;
    const last = await call(contents(owner, id), {
      method: 'PUT',
      token,
      body: bytes.subarray(10),
      headers: { 'content-range': rangeOf(10, 20, 20) },
    });
    expect(last.status).toBe(201);
    return id;
  }

  const expectSigned = (d: Delivered, secret: string) =>
    expect(verifyWebhookSignature(secret, d.headers, d.body, 300)).toBe(true);

  it('delivers content.completed (one-shot and multipart) and content.deleted once each, signed', async () => {
    const { owner, token, hook } = await ownerWithHook();
    const one = await call(contents(owner), {
      method: 'POST',
      token,
      body: 'hello',
      headers: { 'content-type': 'text/plain' },
    });
    expect(one.status).toBe(201);
    const oneId = one.json().id as string;

    const multiId = await uploadInTwo(owner, token);
    expect((await call(contents(owner, oneId), { method: 'DELETE', token })).status).toBe(204);

    await receiver.until(
      () =>
        receiver.about(oneId, 'content.completed').length > 0 &&
        receiver.about(multiId, 'content.completed').length > 0 &&
        receiver.about(oneId, 'content.deleted').length > 0,
    );
    await sleep(2_500); // a few more dispatcher rounds: nothing is sent twice
    const events = [
      receiver.about(oneId, 'content.completed'),
      receiver.about(multiId, 'content.completed'),
      receiver.about(oneId, 'content.deleted'),
    ];
    for (const delivered of events) {
      expect(delivered).toHaveLength(1);
      expectSigned(delivered[0]!, hook.secret);
      const event = JSON.parse(delivered[0]!.body);
      expect(event.id).toBe(delivered[0]!.headers['webhook-id']);
      expect(event.owner).toBe(owner);
      expect(Date.parse(event['occurred-at'])).toBeGreaterThan(Date.now() - 60_000);
    }
    expect(JSON.parse(events[0]![0]!.body).content).toMatchObject({ id: oneId, size: 5, 'content-type': 'text/plain' });
    expect(JSON.parse(events[1]![0]!.body).content).toMatchObject({ id: multiId, size: 20 });
    expect(new Set(events.map((e) => e[0]!.headers['webhook-id'])).size).toBe(3);
  });

  it('sends an event again, with the same id, until its receiver acknowledges it', async () => {
    const { owner, token, hook } = await ownerWithHook(['content.completed']);
    receiver.answers = [500, 503, 404];
    const id = (await call(contents(owner), { method: 'POST', token, body: 'retry me' })).json().id as string;
    await receiver.until(() => receiver.about(id, 'content.completed').some((d) => d.status === 200));
    await sleep(2_500);
    const attempts = receiver.about(id, 'content.completed');
    expect(attempts.map((d) => d.status)).toEqual([500, 503, 404, 200]);
    expect(new Set(attempts.map((d) => d.headers['webhook-id'])).size).toBe(1);
    expect(new Set(attempts.map((d) => d.body)).size).toBe(1);
    for (const d of attempts) expectSigned(d, hook.secret);
  });

  it('lets a slow receiver slow no upload', async () => {
    const { owner, token } = await ownerWithHook(['content.completed']);
    receiver.holdMs = 5_000;
    try {
      const first = (await call(contents(owner), { method: 'POST', token, body: 'a' })).json().id as string;
      await sleep(1_500); // its delivery is being held by now
      const t0 = Date.now();
      for (let i = 0; i < 5; i++)
        expect((await call(contents(owner), { method: 'POST', token, body: randomBytes(1024) })).status).toBe(201);
      expect(Date.now() - t0).toBeLessThan(3_000);
      await receiver.until(() => receiver.about(first, 'content.completed').length > 0);
    } finally {
      receiver.holdMs = 0;
    }
  });

  // The kill comes while an attempt is in flight: its claim is held by a process that is gone, and
  // comes back within the claims' lease (10 s), not the delivery timeout's 40 s it used to take.
  it('delivers a completion after the content-service is killed (kill -9) in the middle of a delivery', async () => {
    const { owner, token, hook } = await ownerWithHook(['content.completed']);
    receiver.otherwise = 503; // the receiver declines: the delivery stays in the outbox
    let id: string;
    let killedAt: number;
    try {
      id = await uploadInTwo(owner, token);
      await receiver.until(() => receiver.about(id, 'content.completed').length > 0);
      receiver.holdMs = 15_000; // the next attempt is held past the lease: the kill comes while it waits
      const arrived = receiver.arrived;
      await receiver.until(() => receiver.arrived > arrived);
      await content.stop('SIGKILL');
      killedAt = Date.now();
    } finally {
      receiver.otherwise = 200;
      receiver.holdMs = 0;
    }
    const declined = receiver.about(id, 'content.completed').length;
    content = await startContent();
    await receiver.until(() => receiver.about(id, 'content.completed').some((d) => d.status === 200), 30_000);
    console.log(`the completion was delivered ${Date.now() - killedAt} ms after the kill`);
    await sleep(2_500);
    const attempts = receiver.about(id, 'content.completed');
    expect(attempts.filter((d) => d.status === 200)).toHaveLength(1);
    expect(attempts.length).toBeGreaterThan(declined);
    expect(new Set(attempts.map((d) => d.headers['webhook-id'])).size).toBe(1);
    for (const d of attempts) expectSigned(d, hook.secret);
  });

  it('lists without secrets, hides another owner’s webhooks, and deletes', async () => {
    const { owner, token, hook } = await ownerWithHook(['content.deleted']);
    const listed = await call(`${gateway.url}/v1/${owner}/webhooks`, { token });
    expect(listed.status).toBe(200);
    expect(listed.json().items).toEqual([expect.objectContaining({ id: hook.id, url: receiverUrl })]);
    expect(listed.body.toString()).not.toContain(hook.secret);
    // What Redis holds of it is sealed: nothing of the secret shows.
    const redis = connectRedis(testStack().backing.REDIS_URL, createLogger({ service: 'test', level: 'silent' }));
    try {
      await redisReady(redis, 5_000);
      const stored = await redisCommand<string>(redis, ['HGET', `wh:${bucket}:hooks:${owner}`, hook.id]);
      expect(JSON.parse(stored).secret).toMatch(/^v1\.[0-9a-f]{16}\./);
      expect(stored).not.toContain(hook.secret.slice('whsec_'.length));
    } finally {
      await closeRedis(redis);
    }

    const other = randomUUID();
    const otherToken = await tokenFor([other]);
    expect((await call(`${gateway.url}/v1/${other}/webhooks`, { token: otherToken })).json().items).toEqual([]);
    const stranger = await call(`${gateway.url}/v1/${other}/webhooks/${hook.id}`, {
      method: 'DELETE',
      token: otherToken,
    });
    expect(stranger.status).toBe(404);
    expect(stranger.json().id).toBe('urn:error:contents:webhookNotFound');
    expect((await call(`${gateway.url}/v1/${owner}/webhooks`, { token: otherToken })).status).toBe(403);
    // Refused for the owner before its body is looked at: a bad body to another owner's path is 403 too.
    for (const body of ['{"url":', JSON.stringify({ url: receiverUrl, events: ['content.deleted'] })]) {
      const refused = await call(`${gateway.url}/v1/${owner}/webhooks`, {
        method: 'POST',
        token: otherToken,
        headers: { 'content-type': 'application/json' },
        body,
      });
      expect([refused.status, refused.json().id]).toEqual([403, 'urn:error:contents:ownerForbidden']);
    }

    expect((await call(`${gateway.url}/v1/${owner}/webhooks/${hook.id}`, { method: 'DELETE', token })).status).toBe(
      204,
    );
    expect((await call(`${gateway.url}/v1/${owner}/webhooks/${hook.id}`, { method: 'DELETE', token })).status).toBe(
      404,
    );
    expect((await call(`${gateway.url}/v1/${owner}/webhooks`, { token })).json().items).toEqual([]);
  });

  describe('under the production URL policy', () => {
    let strict: ServiceHandle;
    let strictGateway: ServiceHandle;

    beforeAll(async () => {
      strict = await startService('content-service', {
        env: contentReplicaEnv({ S3_BUCKET: `${bucket}-strict`, WEBHOOKS_PER_OWNER: '2' }),
        logDir,
      });
      started.push(strict);
      strictGateway = await startGateway(strict.url);
    }, 120_000);

    it('refuses bad registrations with clear errors and stores nothing', async () => {
      const owner = randomUUID();
      const token = await tokenFor([owner]);
      const hooks = `${strictGateway.url}/v1/${owner}/webhooks`;
      const register = (body: unknown) =>
        call(hooks, {
          method: 'POST',
          token,
          headers: { 'content-type': 'application/json' },
          body: typeof body === 'string' ? body : JSON.stringify(body),
        });
      const refusals: [unknown, number, string][] = [
        [{ url: 'http://example.com/hook', events: ['content.completed'] }, 400, 'invalidWebhookUrl'],
        [{ url: 'https://127.0.0.1/hook', events: ['content.completed'] }, 400, 'invalidWebhookUrl'],
        [{ url: 'https://[::ffff:10.0.0.1]/hook', events: ['content.completed'] }, 400, 'invalidWebhookUrl'],
        [{ url: 'https://169.254.169.254/', events: ['content.completed'] }, 400, 'invalidWebhookUrl'],
        [{ url: `https://example.com/${'a'.repeat(2100)}`, events: ['content.completed'] }, 400, 'invalidWebhookUrl'],
        [{ url: 'https://example.com/hook', events: ['content.created'] }, 400, 'invalidWebhookEvents'],
        [{ url: 'https://example.com/hook', events: [] }, 400, 'invalidWebhookEvents'],
        ['{not json', 400, 'invalidWebhook'],
        [['https://example.com/hook'], 400, 'invalidWebhook'],
      ];
      for (const [body, status, code] of refusals) {
        const r = await register(body);
        expect(`${r.status} ${r.json().id}`).toBe(`${status} urn:error:contents:${code}`);
        expect(r.headers.get('content-type')).toBe('application/json; charset=utf-8');
      }
      expect((await call(hooks, { token })).json().items).toEqual([]);

      const ok = { url: 'https://example.com/hook', events: ['content.completed'] };
      expect((await register(ok)).status).toBe(201);
      expect((await register(ok)).status).toBe(201);
      const third = await register(ok);
      expect(`${third.status} ${third.json().id}`).toBe('409 urn:error:contents:tooManyWebhooks');
      expect((await call(hooks, { token })).json().items).toHaveLength(2);
    });
  });
});
