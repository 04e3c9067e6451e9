import { MongoClient } from 'mongodb';
import { ConfigError, mongoTimeouts } from '@cp/config';
import { createLogger } from '@cp/logging';
import { runServer, ServiceMetrics } from '@cp/service-kit';
import { RequestRateLimiter } from '@cp/rate-limit';
import { buildApp, internalCallers } from './app';
import { ChainValidator } from './certificates/ChainValidator';
import { CertificateSignIn } from './challenges/CertificateSignIn';
import { systemClock } from './challenges/Clock';
import { loadConfig } from './config';
import { ApiKeyStore } from './store/ApiKeyStore';
import { closeRedis, connectRedis, redisCommand } from '@cp/redis';
import { RndStore } from './store/RndStore';
import { HttpSessionClient } from './store/SessionClient';
import { TrustStore } from './store/TrustStore';
import { UserRegistry } from './store/UserRegistry';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger({ service: 'auth-service', level: config.LOG_LEVEL });
  const mongo = new MongoClient(config.MONGODB_URL, { ...mongoTimeouts(config.MONGODB_TIMEOUT_MS), maxPoolSize: 30 });
  await mongo.connect();
  const db = mongo.db(config.MONGODB_DATABASE);
  const users = new UserRegistry(db);
  await users.ensureIndexes();
  const redis = connectRedis(config.REDIS_URL, logger, { commandTimeoutMs: config.REDIS_TIMEOUT_MS });
  const apiKeys = new ApiKeyStore(db);
  const signIn = new CertificateSignIn(
    {
      users,
      chains: new ChainValidator(new TrustStore(db)),
      rnds: new RndStore(redis, config.RND_MAX_TRIES),
      sessions: new HttpSessionClient(config.SESSION_SERVICE_URL, config.SESSION_SERVICE_INTERNAL_SECRET),
      clock: systemClock,
      logger,
    },
    { rndTtlSeconds: config.RND_TTL_SECONDS },
  );

  let draining = false;
  const metrics = new ServiceMetrics('auth-service');
  const app = buildApp({
    logger,
    metrics,
    signIn,
    apiKeys,
    users,
    internalCallers: internalCallers({ sessionService: config.INTERNAL_SECRET_SESSION_SERVICE }),
    rateLimiter: RequestRateLimiter.fromConfig(redis, 'rl:auth', config, logger, metrics.registry),
    publicBaseUrl: config.PUBLIC_BASE_URL,
    isDraining: () => draining,
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
      await closeRedis(redis);
      await mongo.close();
    },
  });
}

main().catch((error: unknown) => {
  process.stderr.write(`auth-service: ${error instanceof ConfigError ? error.message : String((error as Error)?.stack ?? error)}\n`);
  process.exit(1);
});
