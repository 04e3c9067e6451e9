import { Gauge } from 'prom-client';
import { ConfigError } from '@cp/config';
import { BearerVerifier } from './http/BearerVerifier';
import { RequestRateLimiter } from '@cp/rate-limit';
import { connectRedis, redisBackend } from '@cp/redis';
import { BODY_SOCKET_HIGH_WATER_MARK, ServiceMetrics, startService, systemClock } from '@cp/service-kit';
import { SessionCache } from '@cp/session-cache';
import { traceS3 } from '@cp/tracing';
import { buildApp } from './app';
import { loadConfig } from './config';
import { DownloadService } from './downloads/DownloadService';
import { CachedSessionValidator } from './http/CachedSessionValidator';
import { HttpSessionValidator } from './clients/HttpSessionValidator';
import { ContentReceipts } from './receipts/ContentReceipts';
import { loadReceiptSigner } from './receipts/loadReceiptSigner';
import { ContentListing } from './listing/ContentListing';
import { ObjectStore } from './store/ObjectStore';
import { RedisLease } from './store/RedisLease';
import { RedisUploadBook } from './store/RedisUploadBook';
import { RedisQuotas } from './store/RedisQuotas';
import { OwnerQuotas } from './quotas/OwnerQuotas';
import { QuotaReconciler } from './admin/QuotaReconciler';
import { QuotaRecounts } from './admin/QuotaRecounts';
import { createS3Client, s3CredentialSource } from './store/s3Client';
import { Presigner } from './store/Presigner';
import { SweeperMetrics } from './sweeper/SweeperMetrics';
import { UploadSweeper } from './sweeper/UploadSweeper';
import { startWebhooks } from './webhooks';
import { PartAssembler } from './uploads/PartAssembler';
import { UploadMetrics } from './uploads/UploadMetrics';
import { KEPT_FOLDERS, MAX_LIFE_TTLS, UploadService } from './uploads/UploadService';

startService({
  name: 'content-service',
  loadConfig,
  build: async ({ config, logger, audit }) => {
    // Read and checked before anything connects: a wrong key or certificate stops the start.
    const receiptSigner = await loadReceiptSigner(config, systemClock());
    logger.info(
      receiptSigner
        ? {
            receiptSigner: receiptSigner.subject,
            notAfter: receiptSigner.notAfter.toISOString(),
            sha256Fingerprint: receiptSigner.fingerprint,
          }
        : { receiptSigner: null },
      receiptSigner ? 'receipts are signed' : 'no receipt signing key: receipts answer 501',
    );
    // A span per S3 call when tracing (presigned URLs are made by another client, never traced).
    const s3 = traceS3(createS3Client(config));
    logger.info({ s3Credentials: s3CredentialSource(config) }, 'S3 client ready');
    // Unfinished uploads are kept in Redis; finished contents are their S3 objects alone.
    const redis = connectRedis(config.REDIS_TARGET, logger, { commandTimeoutMs: config.REDIS_TIMEOUT_MS });
    const book = new RedisUploadBook(redis, config.S3_BUCKET);
    const objects = new ObjectStore(s3, config.S3_BUCKET, {
      callMs: config.S3_TIMEOUT_MS,
      stallMs: config.S3_STALL_TIMEOUT_MS,
    });
    if (config.S3_CREATE_BUCKET) await objects.ensureBucket();
    void objects
      .keepFolders(KEPT_FOLDERS)
      .catch((error: unknown) =>
        logger.warn({ err: error }, 'could not keep the folders of contents; a write may meet a folder being removed'),
      );
    // Until S3 is known to check the checksums writes carry, none are sent and digests are checked here.
    void objects.probeChecksums().then(
      (checked) =>
        logger.info(
          { checksums: checked },
          checked
            ? 'S3 checks write checksums'
            : 'S3 does not check write checksums; the service checks digests itself',
        ),
      (error: unknown) =>
        logger.warn(
          { err: error },
          'could not learn whether S3 checks write checksums; the service checks digests itself',
        ),
    );
    // The backstop must not abort an upload the sweeper still keeps (written to, at most MAX_LIFE_TTLS × the TTL old).
    const ttlDays = Math.max(1, Math.ceil((MAX_LIFE_TTLS * config.UPLOAD_TTL_SECONDS) / 86_400) + 1);
    const lifecycle = await objects.setAbortIncompleteUploadsRule(ttlDays).catch((error: unknown) => {
      // S3 may be down at start-up; the service starts anyway (readiness tells) and the sweeper still expires uploads.
      logger.warn({ err: error }, 'could not set the S3 lifecycle rule');
      return false;
    });
    logger.info(
      { lifecycleRule: lifecycle, days: ttlDays },
      lifecycle
        ? 'S3 lifecycle backstop set'
        : 'S3 server refused the lifecycle rule; the sweeper alone expires uploads',
    );

    // Direct transfer: URLs signed for the S3 address clients reach, which may not be the service's own.
    const presigner = config.DIRECT_TRANSFER
      ? new Presigner(
          createS3Client({ ...config, S3_ENDPOINT: config.DIRECT_S3_ENDPOINT ?? config.S3_ENDPOINT }),
          config.S3_BUCKET,
          config.DIRECT_URL_SECONDS,
        )
      : null;
    logger.info(
      { directTransfer: !!presigner, directUrlSeconds: presigner ? config.DIRECT_URL_SECONDS : undefined },
      presigner ? 'direct transfer to S3 is enabled' : 'direct transfer is off',
    );
    const metrics = new ServiceMetrics('content-service');
    // For the alert on a receipt certificate near its end (k8s/monitoring/rules.yaml).
    if (receiptSigner)
      new Gauge({
        name: 'content_receipt_signer_expiry_timestamp_seconds',
        help: 'When the certificate receipts are signed with expires (Unix time)',
        registers: [metrics.registry],
      }).set(receiptSigner.notAfter.getTime() / 1000);
    const quotaStore = config.QUOTAS ? new RedisQuotas(redis, config.S3_BUCKET) : null;
    const webhooks = startWebhooks({ config, redis, objects, book, logger, registry: metrics.registry });
    await webhooks.index.refresh().catch(() => undefined); // until known, every owner may have webhooks
    const uploads = new UploadService(
      {
        book,
        objects,
        assembler: new PartAssembler(objects),
        logger,
        metrics: new UploadMetrics(metrics.registry),
        quotas: new OwnerQuotas(
          quotaStore,
          book,
          { bytes: config.QUOTA_STORAGE_BYTES || null, uploads: config.QUOTA_UNFINISHED_UPLOADS || null },
          logger,
          quotaStore &&
            new QuotaRecounts(new QuotaReconciler(objects, book, quotaStore), redis, config.S3_BUCKET, logger),
        ),
        presigner,
        events: webhooks.events,
      },
      {
        uploadTtlMs: config.UPLOAD_TTL_SECONDS * 1000,
        completionLeaseMs: config.COMPLETION_LEASE_SECONDS * 1000,
        assemblyLeaseMs: config.ASSEMBLY_LEASE_SECONDS * 1000,
      },
    );
    const downloads = new DownloadService(objects, uploads.status, presigner);
    const receipts = new ContentReceipts(downloads, receiptSigner?.signer ?? null);
    const sweeper = new UploadSweeper(book, uploads.expiry, new RedisLease(redis, config.S3_BUCKET), logger, {
      intervalMs: config.SWEEP_INTERVAL_SECONDS * 1000,
      leaseMs: 30_000,
      batchSize: config.SWEEP_BATCH_SIZE,
      metrics: new SweeperMetrics(metrics.registry, config.SWEEP_INTERVAL_SECONDS),
    });
    sweeper.start();
    const bearer = config.JWT_ISSUER // with a JWKS: loadConfig refuses one without the other
      ? new BearerVerifier({
          issuer: config.JWT_ISSUER,
          audience: config.JWT_AUDIENCE,
          jwksUrl: config.JWT_JWKS_URL,
          jwksFile: config.JWT_JWKS_FILE,
          algorithms: config.JWT_ALGORITHMS,
          ownersClaim: config.JWT_OWNERS_CLAIM,
          cacheSeconds: config.JWT_CACHE_SECONDS,
        })
      : null;
    const sessionService = config.SESSION_SERVICE_URL
      ? new HttpSessionValidator(config.SESSION_SERVICE_URL, config.SESSION_SERVICE_INTERNAL_SECRET)
      : null;
    // While Redis is down, every auth.sid is asked of the session-service.
    const sessions = sessionService
      ? new CachedSessionValidator(new SessionCache(redis), sessionService, systemClock, metrics.registry)
      : null;
    if (!bearer && !sessions)
      throw new ConfigError(
        'JWT_ISSUER',
        'set JWT_ISSUER with JWT_JWKS_URL or JWT_JWKS_FILE, or SESSION_SERVICE_URL: no credential would be accepted',
      );

    const ownerLimit =
      config.RATE_LIMIT_PER_OWNER_POINTS > 0
        ? new RequestRateLimiter(redis, {
            prefix: 'rl:v1',
            perKey: { points: config.RATE_LIMIT_PER_OWNER_POINTS, seconds: config.RATE_LIMIT_PER_OWNER_SECONDS },
            perAddress: null,
            trustedProxyHops: 0,
            logger,
            registry: metrics.registry,
          })
        : null;
    const app = buildApp({
      logger,
      audit,
      ownerLimit,
      metrics,
      uploads,
      downloads,
      receipts,
      listing: new ContentListing(objects, book),
      bearer,
      sessions,
      webhooks,
    });
    const onShutdown = async () => {
      await sweeper.stop();
      await webhooks.dispatcher.stop();
      // Assemblies still running after their requests: given a few seconds to record their part
      // (otherwise their claims run out and a later request assembles the part again).
      await uploads.background.drain(5_000);
    };
    const storage = { readiness: { name: 's3', check: () => objects.ping() }, close: async () => s3.destroy() };
    return {
      app,
      admin: { metrics },
      backends: [redisBackend(redis), storage],
      onShutdown,
      server: { requestTimeoutMs: config.REQUEST_IDLE_TIMEOUT_MS, socketHighWaterMark: BODY_SOCKET_HIGH_WATER_MARK },
    };
  },
});
