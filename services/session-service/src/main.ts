import { connectMongo, ServiceMetrics, startService, systemClock } from '@cp/service-kit';
import { RequestRateLimiter } from '@cp/rate-limit';
import { connectRedis, redisBackend } from '@cp/redis';
import { SessionCache } from '@cp/session-cache';
import { buildApp, internalCallers } from './app';
import { loadConfig } from './config';
import { SessionService } from './sessions/SessionService';
import { SessionSweeper } from './sessions/SessionSweeper';
import { ApiKeyStore, UserRegistry } from '@cp/registry';
import { SessionRepository } from './store/SessionRepository';

startService({
  name: 'session-service',
  loadConfig,
  build: async ({ config, logger, audit }) => {
    const mongo = await connectMongo(config, 50);
    const repo = new SessionRepository(mongo.db);
    // The auth-service's database on the same server, read at each refresh (api key, registration):
    // the session-service calls no other service, so a refresh works while the auth-service is down.
    const registry = mongo.client.db(config.REGISTRY_MONGODB_DATABASE);
    await repo.ensureIndexes();
    const redis = connectRedis(config.REDIS_TARGET, logger, { commandTimeoutMs: config.REDIS_TIMEOUT_MS });
    const sessions = new SessionService(
      repo,
      new SessionCache(redis, config.CACHE_TTL_SECONDS, config.SID_TTL_SECONDS),
      systemClock,
      {
        sidTtlMs: config.SID_TTL_SECONDS * 1000,
        refreshTtlMs: config.REFRESH_TTL_SECONDS * 1000,
        maxLifetimeMs: config.SESSION_MAX_LIFETIME_SECONDS * 1000,
        graceMs: config.REFRESH_GRACE_SECONDS * 1000,
      },
      logger,
      new UserRegistry(registry),
    );
    const sweeper = new SessionSweeper(
      repo,
      systemClock,
      logger,
      {
        intervalMs: config.SWEEP_INTERVAL_SECONDS * 1000,
        familyMaxAgeMs: config.REFRESH_TTL_SECONDS * 1000,
      },
      () => sessions.reassertRevocations(),
    );
    sweeper.start();

    const metrics = new ServiceMetrics('session-service');
    const app = buildApp({
      audit,
      logger,
      metrics,
      sessions,
      apiKeys: new ApiKeyStore(registry),
      internalCallers: internalCallers({
        authService: config.INTERNAL_SECRET_AUTH_SERVICE,
        contentService: config.INTERNAL_SECRET_CONTENT_SERVICE,
      }),
      rateLimiter: RequestRateLimiter.fromConfig(redis, 'rl:sessions', config, logger, metrics.registry),
    });
    // The backends' checks are diagnostics only (/healthz/deps, backend_up): readiness does not follow them.
    return { app, admin: { metrics }, backends: [redisBackend(redis), mongo], onShutdown: () => sweeper.stop() };
  },
});
