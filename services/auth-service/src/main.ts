import { connectMongo, ServiceMetrics, startService, systemClock } from '@cp/service-kit';
import { RequestRateLimiter } from '@cp/rate-limit';
import { connectRedis, redisBackend } from '@cp/redis';
import { buildApp } from './app';
import { ChainValidator } from './certificates/ChainValidator';
import { CertificateSignIn } from './challenges/CertificateSignIn';
import { loadConfig } from './config';
import { ApiKeyStore, UserRegistry } from '@cp/registry';
import { RND_SCRIPTS, RndStore } from './store/RndStore';
import { HttpSessionClient } from './clients/SessionClient';
import { TrustStore } from './store/TrustStore';

startService({
  name: 'auth-service',
  loadConfig,
  build: async ({ config, logger, audit }) => {
    const mongo = await connectMongo(config, 30);
    const db = mongo.db;
    const users = new UserRegistry(db);
    await users.ensureIndexes();
    const redis = connectRedis(config.REDIS_TARGET, logger, {
      commandTimeoutMs: config.REDIS_TIMEOUT_MS,
      scripts: RND_SCRIPTS,
    });
    // The trust lists read (and their certificates decoded) before the first sign-in needs them.
    const trust = new TrustStore(db);
    const readingSince = Date.now();
    await trust.anchors().then(
      (a) =>
        logger.info(
          { roots: a.roots.length, intermediates: a.intermediates.length, ms: Date.now() - readingSince },
          'trust lists read',
        ),
      (error: unknown) =>
        logger.warn({ err: String(error) }, 'could not read the trust lists at start; the first sign-in will'),
    );
    const signIn = new CertificateSignIn(
      {
        users,
        chains: new ChainValidator(trust),
        rnds: new RndStore(redis, config.RND_MAX_TRIES),
        sessions: new HttpSessionClient(config.SESSION_SERVICE_URL, config.SESSION_SERVICE_INTERNAL_SECRET),
        clock: systemClock,
        logger,
      },
      { rndTtlSeconds: config.RND_TTL_SECONDS },
    );
    const metrics = new ServiceMetrics('auth-service');
    const app = buildApp({
      audit,
      logger,
      metrics,
      signIn,
      apiKeys: new ApiKeyStore(db),
      rateLimiter: RequestRateLimiter.fromConfig(redis, 'rl:auth', config, logger, metrics.registry),
      publicBaseUrl: config.PUBLIC_BASE_URL,
    });
    return { app, admin: { metrics }, backends: [redisBackend(redis), mongo] };
  },
});
