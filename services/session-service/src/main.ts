import { MongoClient } from 'mongodb';
import { ConfigError, mongoTimeouts } from '@cp/config';
import { createLogger } from '@cp/logging';
import { runServer, ServiceMetrics } from '@cp/service-kit';
import { RequestRateLimiter } from '@cp/rate-limit';
import { buildApp, internalCallers } from './app';
import { loadConfig } from './config';
import { systemClock } from './sessions/Clock';
import { SessionService } from './sessions/SessionService';
import { SessionSweeper } from './sessions/SessionSweeper';
import { HttpApiKeyVerifier } from './store/ApiKeyVerifier';
import { HttpRegistrationChecker } from './store/RegistrationChecker';
import { closeRedis, connectRedis, redisCommand } from '@cp/redis';
import { SessionCache } from '@cp/session-cache';
import { SessionRepository } from './store/SessionRepository';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger({ service: 'session-service', level: config.LOG_LEVEL });
  const mongo = new MongoClient(config.MONGODB_URL, { ...mongoTimeouts(config.MONGODB_TIMEOUT_MS), maxPoolSize: 50 });
  await mongo.connect();
  const db = mongo.db(config.MONGODB_DATABASE);
  const repo = new SessionRepository(db);
  await repo.ensureIndexes();
  const redis = connectRedis(config.REDIS_URL, logger, { commandTimeoutMs: config.REDIS_TIMEOUT_MS });
  const sessions = new SessionService(
    repo,
    new SessionCache(redis, config.CACHE_TTL_SECONDS),
    systemClock,
    {
      sidTtlMs: config.SID_TTL_SECONDS * 1000,
      refreshTtlMs: config.REFRESH_TTL_SECONDS * 1000,
      maxLifetimeMs: config.SESSION_MAX_LIFETIME_SECONDS * 1000,
      graceMs: config.REFRESH_GRACE_SECONDS * 1000,
    },
    logger,
    new HttpRegistrationChecker(config.AUTH_SERVICE_URL, config.AUTH_SERVICE_INTERNAL_SECRET),
  );
  const sweeper = new SessionSweeper(repo, systemClock, logger, {
    intervalMs: config.SWEEP_INTERVAL_SECONDS * 1000,
    familyMaxAgeMs: config.REFRESH_TTL_SECONDS * 1000,
  });
  sweeper.start();

  let draining = false;
  const metrics = new ServiceMetrics('session-service');
  const app = buildApp({
    logger,
    metrics,
    sessions,
    apiKeys: new HttpApiKeyVerifier(config.AUTH_SERVICE_URL, config.AUTH_SERVICE_INTERNAL_SECRET),
    internalCallers: internalCallers({ authService: config.INTERNAL_SECRET_AUTH_SERVICE, contentService: config.INTERNAL_SECRET_CONTENT_SERVICE }),
    rateLimiter: RequestRateLimiter.fromConfig(redis, 'rl:sessions', config, logger, metrics.registry),
    isDraining: () => draining,
    // Diagnostics only (/healthz/deps, backend_up): readiness does not follow the backends.
    readiness: [
      { name: 'mongodb', check: async () => void (await db.command({ ping: 1 })) },
      { name: 'redis', check: async () => void (await redisCommand(redis, ['PING'])) },
    ],
  });
  await runServer(app, {
    port: config.PORT,
    host: config.HOST,
    logger,
    shutdownGraceMs: config.SHUTDOWN_GRACE_MS,
    onDraining: () => {
      draining = true;
    },
    onShutdown: async () => {
      await sweeper.stop();
      await closeRedis(redis);
      await mongo.close();
    },
  });
}

main().catch((error: unknown) => {
  process.stderr.write(`session-service: ${error instanceof ConfigError ? error.message : String((error as Error)?.stack ?? error)}\n`);
  process.exit(1);
});
