// A Redis that stops answering mid-connection (paused, or its host gone quiet): every call fails
// within its deadline, and the connection holds a bounded number of commands, not one per call
// made while it hangs. Real Redis behind a relay this test can silence.
import { createServer, connect, type Server, type Socket } from 'node:net';
import { createLogger } from '@cp/logging';
import { connectRedis, redisCall, RedisUnavailable, type Redis } from '../src';

const logger = createLogger({ service: 'redis-test', level: 'silent' });

describe('a Redis that stops answering', () => {
  let relay: Server;
  let redis: Redis;
  let silent = false;
  const sockets: Socket[] = [];

  beforeAll(async () => {
    const target = new URL(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
    relay = createServer((client) => {
      const server = connect(Number(target.port || 6379), target.hostname);
      sockets.push(client, server);
      client.on('data', (chunk) => {
        if (!silent) server.write(chunk);
      });
      server.on('data', (chunk) => {
        if (!silent) client.write(chunk);
      });
      client.on('error', () => server.destroy());
      server.on('error', () => client.destroy());
    });
    await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
    const port = (relay.address() as { port: number }).port;
    redis = connectRedis(`redis://127.0.0.1:${port}`, logger, { commandTimeoutMs: 300 });
    for (let i = 0; i < 250 && !redis.isReady; i++) await new Promise((r) => setTimeout(r, 20));
  });

  afterAll(async () => {
    for (const s of sockets) s.destroy();
    redis?.destroy();
    await new Promise((resolve) => relay?.close(resolve));
  });

  it('answers each call with RedisUnavailable within its deadline, and refuses at once past the queue bound', async () => {
    expect(await redisCall(redis, (r) => r.ping())).toBe('PONG');
    silent = true;
    const started = performance.now();
    const calls = Array.from({ length: 6_000 }, () =>
      redisCall(redis, (r) => r.get('hung-redis-test')).then(
        () => 'answered',
        (error: unknown) => (error instanceof RedisUnavailable ? error.message : `other: ${String(error)}`),
      ),
    );
    const outcomes = await Promise.all(calls);
    const ms = performance.now() - started;
    const counts = outcomes.reduce<Record<string, number>>((m, o) => ({ ...m, [o]: (m[o] ?? 0) + 1 }), {});
    console.log(`6,000 calls to a silent Redis settled in ${ms.toFixed(0)} ms: ${JSON.stringify(counts)}`);
    expect(outcomes).not.toContain('answered');
    expect(outcomes.filter((o) => o.startsWith('other'))).toEqual([]);
    // At most 5,000 commands wait for the deadline; the rest were refused without waiting for it.
    expect(counts['redis did not answer in time']).toBeLessThanOrEqual(5_000);
    expect(outcomes.filter((o) => o.includes('queue is full')).length).toBeGreaterThanOrEqual(1_000);
    expect(ms).toBeLessThan(5_000);
  });
});
