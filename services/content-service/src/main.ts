import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { S3Client } from '@aws-sdk/client-s3';
import { MongoClient } from 'mongodb';
import { ConfigError, mongoTimeouts } from '@cp/config';
import { BearerVerifier } from '@cp/credentials';
import { createLogger } from '@cp/logging';
import { closeRedis, connectRedis } from '@cp/redis';
import { runServer, ServiceMetrics } from '@cp/service-kit';
import { SessionCache } from '@cp/session-cache';
import { buildApp } from './app';
import { loadConfig } from './config';
import { DownloadService } from './downloads/DownloadService';
import { CachedSessionValidator } from './http/CachedSessionValidator';
import { HttpSessionValidator } from './http/HttpSessionValidator';
import { ContentRepository } from './store/ContentRepository';
import { Claims } from './store/Claims';
import { Locks } from './store/Locks';
import { ObjectStore } from './store/ObjectStore';
import { UploadLedger } from './store/UploadLedger';
import { UploadSweeper } from './sweeper/UploadSweeper';
import { PartAssembler } from './uploads/PartAssembler';
import { UploadMetrics } from './uploads/UploadMetrics';
import { MAX_LIFE_TTLS, UploadService } from './uploads/UploadService';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger({ service: 'content-service', level: config.LOG_LEVEL });

  const s3 = new S3Client({
    endpoint: config.S3_ENDPOINT,
    region: config.S3_REGION,
    forcePathStyle: config.S3_FORCE_PATH_STYLE,
    credentials: { accessKeyId: config.S3_ACCESS_KEY_ID, secretAccessKey: config.S3_SECRET_ACCESS_KEY },
    // Parts are streamed with their exact length; no whole-body checksums computed up front.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    requestHandler: {
      httpAgent: new HttpAgent({ keepAlive: true, maxSockets: 256 }),
      httpsAgent: new HttpsAgent({ keepAlive: true, maxSockets: 256 }),
      connectionTimeout: Math.min(5_000, config.S3_TIMEOUT_MS),
      // An idle socket (no byte either way) for this long is dead; answers are bounded per call in ObjectStore.
      socketTimeout: config.REQUEST_IDLE_TIMEOUT_MS,
    },
    maxAttempts: 2,
  });
  const mongo = new MongoClient(config.MONGODB_URL, { ...mongoTimeouts(config.MONGODB_TIMEOUT_MS), maxPoolSize: 50 });
  await mongo.connect();
  const db = mongo.db(config.MONGODB_DATABASE);

  const contents = new ContentRepository(db);
  const ledger = new UploadLedger(db);
  await contents.ensureIndexes();
  const objects = new ObjectStore(s3, config.S3_BUCKET, { callMs: config.S3_TIMEOUT_MS, stallMs: config.S3_STALL_TIMEOUT_MS });
  if (config.S3_CREATE_BUCKET) await objects.ensureBucket();
  // The backstop must not abort an upload the sweeper still keeps (written to, at most MAX_LIFE_TTLS × the TTL old).
  const ttlDays = Math.max(1, Math.ceil((MAX_LIFE_TTLS * config.UPLOAD_TTL_SECONDS) / 86_400) + 1);
  const lifecycle = await objects.setAbortIncompleteUploadsRule(ttlDays).catch((error: unknown) => {
    // S3 may be down at start-up; the service starts anyway (readiness tells) and the sweeper still expires uploads.
    logger.warn({ err: error }, 'could not set the S3 lifecycle rule');
    return false;
  });
  logger.info({ lifecycleRule: lifecycle, days: ttlDays }, lifecycle ? 'S3 lifecycle backstop set' : 'S3 server refused the lifecycle rule; the sweeper alone expires uploads');

  const metrics = new ServiceMetrics('content-service');
  const uploads = new UploadService(
    { contents, ledger, objects, assembler: new PartAssembler(objects), locks: new Locks(new Claims(db, 'locks')), logger, metrics: new UploadMetrics(metrics.registry) },
    {
      uploadTtlMs: config.UPLOAD_TTL_SECONDS * 1000,
      completionLeaseMs: config.COMPLETION_LEASE_SECONDS * 1000,
      assemblyLeaseMs: config.ASSEMBLY_LEASE_SECONDS * 1000,
    },
  );
  const downloads = new DownloadService(contents, objects, uploads.status);
  const sweeper = new UploadSweeper(contents, uploads.expiry, new Claims(db, 'leases'), logger, {
    intervalMs: config.SWEEP_INTERVAL_SECONDS * 1000,
    leaseMs: 10 * 60_000,
    batchSize: config.SWEEP_BATCH_SIZE,
  });
  sweeper.start();
  const bearer =
    config.JWT_ISSUER // with a JWKS: loadConfig refuses one without the other
      ? new BearerVerifier({
          issuer: config.JWT_ISSUER,
          audience: config.JWT_AUDIENCE,
          jwksUrl: config.JWT_JWKS_URL,
          jwksFile: config.JWT_JWKS_FILE,
          algorithms: config.JWT_ALGORITHMS,
          ownersClaim: config.JWT_OWNERS_CLAIM,
        })
      : null;
  const sessionService = config.SESSION_SERVICE_URL ? new HttpSessionValidator(config.SESSION_SERVICE_URL, config.SESSION_SERVICE_INTERNAL_SECRET) : null;
  // Redis is optional: without it (or while it is down) every auth.sid is asked of the session-service.
  const redis = sessionService && config.REDIS_URL ? connectRedis(config.REDIS_URL, logger, { commandTimeoutMs: config.REDIS_TIMEOUT_MS }) : null;
  const sessions = sessionService && redis ? new CachedSessionValidator(new SessionCache(redis), sessionService, Date.now, metrics.registry) : sessionService;
  if (!bearer && !sessions) throw new ConfigError('JWT_ISSUER', 'set JWT_ISSUER with JWT_JWKS_URL or JWT_JWKS_FILE, or SESSION_SERVICE_URL: no credential would be accepted');

  let draining = false;
  const app = buildApp({
    logger,
    metrics,
    uploads,
    downloads,
    bearer,
    sessions,
    isDraining: () => draining,
    readiness: [
      { name: 'mongodb', check: async () => void (await db.command({ ping: 1 })) },
      { name: 's3', check: () => objects.ping() },
    ],
  });
  await runServer(app, {
    port: config.PORT,
    host: config.HOST,
    logger,
    shutdownGraceMs: config.SHUTDOWN_GRACE_MS,
    requestTimeoutMs: config.REQUEST_IDLE_TIMEOUT_MS,
    onDraining: () => {
      draining = true;
    },
    onShutdown: async () => {
      await sweeper.stop();
      await mongo.close();
      if (redis) await closeRedis(redis);
      s3.destroy();
    },
  });
}

main().catch((error: unknown) => {
  process.stderr.write(`content-service: ${error instanceof ConfigError ? error.message : String((error as Error)?.stack ?? error)}\n`);
  process.exit(1);
});
