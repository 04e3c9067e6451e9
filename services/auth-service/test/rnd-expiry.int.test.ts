// The auth-service in process with a clock the test moves, against the real Redis and
// MongoDB-compatible server, and the test stack's session-service: rnd lifetime without sleeping.
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Binary, MongoClient } from 'mongodb';
import { createLogger, openAuditLog } from '@cp/logging';
import { ServiceMetrics } from '@cp/service-kit';
import { decryptEncryptedKey, TestPki, type Issued } from '../../../test-e2e/support/pki';
import { testStack } from '../../../test-e2e/support/stack';
import { buildApp } from '../src/app';
import { parseDer } from '../src/certificates/CertificateText';
import { ChainValidator } from '../src/certificates/ChainValidator';
import { CertificateSignIn } from '../src/challenges/CertificateSignIn';
import type { Clock } from '@cp/service-kit';
import { ApiKeyStore, UserRegistry } from '@cp/registry';
import { closeRedis, connectRedis, type Redis } from '@cp/redis';
import { RND_SCRIPTS, RndStore } from '../src/store/RndStore';
import { HttpSessionClient } from '../src/clients/SessionClient';
import { TrustStore } from '../src/store/TrustStore';

class MovableClock {
  private offsetMs = 0;
  readonly now: Clock = () => new Date(Date.now() + this.offsetMs);
  advance(ms: number): void {
    this.offsetMs += ms;
  }
}

const MINUTE = 60_000;

describe('rnd lifetime (in-process auth-service with a movable clock)', () => {
  const pki = new TestPki();
  const clock = new MovableClock();
  let mongo: MongoClient;
  let redis: Redis<typeof RND_SCRIPTS>;
  let server: Server;
  let base: string;
  let apiKey: string;
  let user: Issued;
  let dbName: string;

  beforeAll(async () => {
    const stack = testStack();
    const logger = createLogger({ service: 'auth-service-test', level: 'silent' });
    mongo = await new MongoClient(stack.backing.MONGODB_URL).connect();
    dbName = `${stack.prefix}-auth-inproc-${randomUUID().slice(0, 8)}`;
    const db = mongo.db(dbName);
    redis = connectRedis(stack.backing.REDIS_URL, logger, { scripts: RND_SCRIPTS });
    await redis.connect().catch(() => undefined);
    while (!redis.isReady) await new Promise((r) => setTimeout(r, 20));

    const root = pki.root('Clock Root');
    user = pki.issue('clock-user', root);
    const users = new UserRegistry(db);
    const trust = new TrustStore(db);
    const apiKeys = new ApiKeyStore(db);
    const rootCert = parseDer(Buffer.from(root.der));
    await trust.add({
      _id: rootCert.thumbprint,
      kind: 'root',
      subject: 'Clock Root',
      der: new Binary(root.der),
      addedAt: clock.now(),
    });
    const userId = randomUUID();
    await users.upsertUser(userId, [randomUUID()], clock.now());
    await users.addCertificate({
      _id: user.thumbprint,
      userId,
      subject: 'clock-user',
      notAfter: new Date(Date.now() + 365 * 24 * 3600 * 1000),
      der: new Binary(user.der),
      addedAt: clock.now(),
    });
    apiKey = await apiKeys.create('clock test', clock.now());

    const signIn = new CertificateSignIn(
      {
        users,
        chains: new ChainValidator(trust),
        rnds: new RndStore(redis, 5),
        sessions: new HttpSessionClient(stack.services['session-service']!.url, stack.internalSecrets.authToSession),
        clock: clock.now,
        logger,
      },
      { rndTtlSeconds: 600 },
    );
    const app = buildApp({
      logger,
      audit: openAuditLog('auth-test', 'off'),
      metrics: new ServiceMetrics('auth-test'),
      signIn,
      apiKeys,
      rateLimiter: null,
    });
    server = app.listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/auth/v5.13`;
  });

  afterAll(async () => {
    server?.close();
    if (redis) await closeRedis(redis);
    await mongo?.close();
  });

  async function issue(): Promise<Buffer> {
    const res = await fetch(`${base}/authenticate-by-cert?apiKey=${apiKey}`, { method: 'POST', body: user.pem });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { EncryptedKey: string; Link: { Href: string } };
    // Without PUBLIC_BASE_URL the link is built from the request's own host.
    expect(body.Link.Href).toBe(`${base}/approve-cert?thumbprint=${user.thumbprint}`);
    return decryptEncryptedKey(body.EncryptedKey, user);
  }

  async function approve(rnd: Buffer): Promise<{ status: number; Code?: string }> {
    const res = await fetch(`${base}/approve-cert?thumbprint=${user.thumbprint}&apiKey=${apiKey}`, {
      method: 'POST',
      body: rnd,
    });
    const body = (await res.json()) as { Code?: string };
    return { status: res.status, Code: body.Code };
  }

  it('accepts an rnd just under 10 minutes old', async () => {
    const rnd = await issue();
    clock.advance(10 * MINUTE - 1_000);
    expect(await approve(rnd)).toEqual({ status: 200, Code: undefined });
  });

  it('refuses an rnd older than 10 minutes with RndBytesNotFound, for good', async () => {
    const rnd = await issue();
    clock.advance(10 * MINUTE + 1_000);
    expect(await approve(rnd)).toEqual({ status: 403, Code: 'RndBytesNotFound' });
    clock.advance(-20 * MINUTE); // even back in time: the expired rnd was deleted
    expect(await approve(rnd)).toEqual({ status: 403, Code: 'RndBytesNotFound' });
    clock.advance(10 * MINUTE - 1_000);
  });

  it('answers 503 CreateSessionError when the session-service does not answer', async () => {
    const rnd = await issue();
    const stack = testStack();
    const logger = createLogger({ service: 'auth-service-test', level: 'silent' });
    const db = mongo.db(`${stack.prefix}-auth-nosession-${randomUUID().slice(0, 8)}`);
    // Same registry and Redis, but a session-service address where nothing listens.
    const signIn = new CertificateSignIn(
      {
        users: new UserRegistry(mongo.db(dbName)),
        chains: new ChainValidator(new TrustStore(db)),
        rnds: new RndStore(redis, 5),
        sessions: new HttpSessionClient('http://127.0.0.1:1', stack.internalSecrets.authToSession),
        clock: clock.now,
        logger,
      },
      { rndTtlSeconds: 600 },
    );
    const failed = await signIn.approve(user.thumbprint, rnd).catch((e: unknown) => e);
    expect(failed).toMatchObject({ status: 503, code: 'CreateSessionError' });
    // No session came of it: the same rnd is approved once the session-service answers, and only once.
    expect(await approve(rnd)).toEqual({ status: 200, Code: undefined });
    expect(await approve(rnd)).toEqual({ status: 403, Code: 'RndBytesNotFound' });
  });

  it('checks certificate validity at the clock time', async () => {
    clock.advance(2 * 365 * 24 * 60 * MINUTE);
    try {
      const res = await fetch(`${base}/authenticate-by-cert?apiKey=${apiKey}`, { method: 'POST', body: user.pem });
      expect(res.status).toBe(406);
      expect(((await res.json()) as { Code: string }).Code).toBe('CertNotValid');
    } finally {
      clock.advance(-2 * 365 * 24 * 60 * MINUTE);
    }
  });
});
