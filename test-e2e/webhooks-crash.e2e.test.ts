// The hardest moment to die: a one-shot upload's object is stored (the fact) but its event is not
// published (Redis hangs right then), and the content-service is killed (kill -9) before anything
// could retry. The intent written before the fact survives in Redis; the restarted service checks
// the fact, publishes the event and delivers it once, signed. A Redis, content-service and gateway
// of the test's own (the Redis is the one paused), on a bucket of its own.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createLogger } from '@cp/logging';
import { verifyWebhookSignature } from '@cp/protocol';
import { closeRedis, connectRedis, redisCommand, type Redis } from '@cp/redis';
import { eventIdOf } from '../services/content-service/src/webhooks/events';
import { BackingServer } from './support/privateBacking';
import { contentReplicaEnv, freePort, type ServiceHandle, startGatewayFor, startService } from './support/replicas';
import { testStack } from './support/stack';
import { registerOwner, WebhookReceiver } from './support/webhookReceiver';

describe('an event whose publication died with its process', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-hooks-crash-'));
  const logDir = join(testStack().logDir, 'webhooks-crash');
  const bucket = `${testStack().prefix}-hooks-crash`;
  const started: ServiceHandle[] = [];
  const receiver = new WebhookReceiver();
  let redis: BackingServer;
  let admin: Redis;
  let env: Record<string, string>;
  let contentPort: number;
  let gateway: ServiceHandle;

  const startContent = async () => {
    const handle = await startService('content-service', { port: contentPort, env, logDir });
    started.push(handle);
    return handle;
  };

  beforeAll(async () => {
    redis = new BackingServer('redis', await freePort(), dir);
    await redis.start();
    const redisUrl = `redis://127.0.0.1:${redis.port}`;
    admin = connectRedis(redisUrl, createLogger({ service: 'test', level: 'silent' }));
    env = contentReplicaEnv({
      REDIS_URL: redisUrl,
      S3_BUCKET: bucket,
      WEBHOOK_ALLOW_HTTP: 'true',
      WEBHOOK_ALLOW_PRIVATE: 'true',
      WEBHOOK_POLL_SECONDS: '1',
      WEBHOOK_CHECK_SECONDS: '2',
    });
    contentPort = await freePort();
    const content = await startContent();
    gateway = await startGatewayFor(content.url, logDir, started);
  }, 120_000);

  afterAll(async () => {
    await Promise.all(started.map((s) => s.stop('SIGKILL')));
    await receiver.stop();
    if (admin) await closeRedis(admin);
    await redis?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('is published from its intent and delivered once after a restart', async () => {
    const url = await receiver.start();
    const { owner, token, hook } = await registerOwner(gateway.url, url, ['content.completed']);
    const { secret } = hook;
    const intents = `wh:${bucket}:intents`;
    const due = `wh:${bucket}:due`;

    // A one-shot POST whose body comes in two halves: its intent is written before the body is stored.
    const body = randomBytes(64 * 1024);
    let answered!: (r: { status: number; id: string }) => void;
    const answer = new Promise<{ status: number; id: string }>((r) => (answered = r));
    const req = request(`${gateway.url}/v1/${owner}/contents`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'text/plain', 'content-length': body.length },
    });
    req.on('response', (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => answered({ status: res.statusCode!, id: (JSON.parse(text) as { id: string }).id }));
    });
    req.write(body.subarray(0, body.length / 2));
    for (let i = 0; i < 100 && Number(await redisCommand(admin, ['ZCARD', intents])) === 0; i++) await sleep(50);
    expect(await redisCommand(admin, ['ZCARD', intents])).toBe(1);

    // Redis hangs; the rest of the body arrives: the object is stored, the publication times out.
    await redis.pause();
    req.end(body.subarray(body.length / 2));
    const { status, id } = await answer;
    expect(status).toBe(201);
    await started.find((s) => s.port === contentPort)!.stop('SIGKILL');
    redis.resume();
    expect(await redisCommand(admin, ['ZCARD', due])).toBe(0); // nothing was published
    expect(receiver.received).toHaveLength(0);

    await startContent();
    await receiver.until(() => receiver.about(id, 'content.completed').length > 0, 30_000);
    await sleep(2_500);
    const delivered = receiver.about(id, 'content.completed');
    expect(delivered).toHaveLength(1);
    expect(delivered[0]!.headers['webhook-id']).toBe(eventIdOf('content.completed', id));
    expect(verifyWebhookSignature(secret, delivered[0]!.headers, delivered[0]!.body, 300)).toBe(true);
    expect(JSON.parse(delivered[0]!.body).content).toMatchObject({
      id,
      size: body.length,
      'content-type': 'text/plain',
    });
    expect(await redisCommand(admin, ['ZCARD', intents])).toBe(0);
  });
});
