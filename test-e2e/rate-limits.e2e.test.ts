// Rate limits on /auth and /sessions, turned on with small limits in an auth-service, a
// session-service and a gateway of their own (the shared test stack runs without limits). The
// test plays the ingress in front of the gateway: it sends X-Forwarded-For "<spoofed>, <client>",
// the gateway appends what it saw, and the services trust two hops (ingress and gateway).
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { call, type Answer } from './support/http';
import { newApiKey } from './support/signin';
import { freePort, startFront, startService, type ServiceHandle } from './support/replicas';
import { testStack } from './support/stack';

const PER_KEY = 3;
const PER_ADDRESS = 5;
const limits = {
  RATE_LIMIT_ENABLED: 'true',
  RATE_LIMIT_PER_KEY_POINTS: String(PER_KEY),
  RATE_LIMIT_PER_KEY_SECONDS: '60',
  RATE_LIMIT_PER_ADDRESS_POINTS: String(PER_ADDRESS),
  RATE_LIMIT_PER_ADDRESS_SECONDS: '60',
  TRUSTED_PROXY_HOPS: '2',
  LOG_LEVEL: 'warn',
};

describe('rate limits on /auth and /sessions', () => {
  const started: ServiceHandle[] = [];
  let gateway: string;

  beforeAll(async () => {
    gateway = (await startFront('rate-limits', limits, started)).url;
  });

  afterAll(async () => {
    await Promise.all(started.map((s) => s.stop()));
  });

  const address = () => `203.0.113.${1 + (randomBytes(1)[0]! % 250)}`;
  /** An address no other test or run uses: 10.x.y.z from random bytes. */
  const uniqueAddress = () => `10.${[...randomBytes(3)].join('.')}`;
  const signInAttempt = (apiKey: string, client: string, spoofed = uniqueAddress()): Promise<Answer> =>
    call(`${gateway}/auth/v5.13/authenticate-by-cert?apiKey=${apiKey}`, {
      method: 'POST',
      body: 'not a certificate',
      headers: { 'x-forwarded-for': `${spoofed}, ${client}` },
    });
  const expectTooMany = (res: Answer) => {
    expect(res.status).toBe(429);
    const retryAfter = Number(res.headers.get('retry-after'));
    expect(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60).toBe(true);
    expect(res.json()).toEqual({ Code: 'TooManyRequests', Message: expect.any(String) });
  };

  it('the sign-in attempt after the limit of an api key gets 429 with Retry-After; another api key is not affected', async () => {
    const [apiKey, other] = await Promise.all([newApiKey(), newApiKey()]);
    for (let i = 0; i < PER_KEY; i++)
      expect((await signInAttempt(apiKey, uniqueAddress())).json().Code).toBe('CertUnreadable');
    expectTooMany(await signInAttempt(apiKey, uniqueAddress()));
    expect((await signInAttempt(other, uniqueAddress())).json().Code).toBe('CertUnreadable');
  });

  it('limits a client address as the trusted proxies saw it, whatever the client puts on the left', async () => {
    const client = uniqueAddress();
    // Unknown api keys, a new one each time: only the address is counted against its limit.
    const attempt = (spoofed?: string) => signInAttempt(randomBytes(16).toString('hex'), client, spoofed);
    for (let i = 0; i < PER_ADDRESS; i++) expect((await attempt()).json().Code).toBe('InvalidApiKey');
    expectTooMany(await attempt());
    expectTooMany(await attempt(address()));
    expect((await signInAttempt(randomBytes(16).toString('hex'), uniqueAddress(), client)).json().Code).toBe(
      'InvalidApiKey',
    );
  });

  it('limits refresh on /sessions per api key', async () => {
    const apiKey = await newApiKey();
    const refresh = () =>
      call(
        `${gateway}/sessions/v5.13/sessions/refresh?auth.sid=${'A'.repeat(64)}&refresh-token=${'B'.repeat(64)}&api-key=${apiKey}`,
        {
          method: 'POST',
          headers: { 'x-forwarded-for': uniqueAddress() },
        },
      );
    for (let i = 0; i < PER_KEY; i++) expect((await refresh()).status).toBe(403);
    expectTooMany(await refresh());
  });

  it('goes on limiting in memory, without 500s, when Redis does not answer', async () => {
    const stack = testStack();
    const deadRedis = `redis://127.0.0.1:${await freePort()}`;
    const auth = await startService('auth-service', {
      logDir: join(stack.logDir, 'rate-limits'),
      env: { ...stack.authEnv, ...limits, TRUSTED_PROXY_HOPS: '0', REDIS_URL: deadRedis },
    });
    try {
      const apiKey = randomBytes(16).toString('hex');
      const attempt = () =>
        call(`${auth.url}/auth/v5.13/authenticate-by-cert?apiKey=${apiKey}`, { method: 'POST', body: 'x' });
      for (let i = 0; i < PER_KEY; i++) expect((await attempt()).json().Code).toBe('InvalidApiKey');
      expectTooMany(await attempt());
      // Operators see both on /metrics: the refusals and that Redis was not there to count them.
      const metrics = (await call(`${auth.adminUrl}/metrics`)).body.toString();
      expect(metrics).toMatch(/^rate_limited_requests_total\{[^}]*limit="key"[^}]*\} 1$/m);
      expect(metrics).toMatch(/^rate_limit_redis_failures_total\{[^}]*\} [1-9]\d*$/m);
    } finally {
      await auth.stop();
    }
  }, 60_000);
});
