import {
  ConfigError,
  env,
  optionalCalledService,
  parseEnv,
  redisSettings,
  redisTarget,
  refuseRemoved,
  serviceSettings,
  z,
} from '@cp/config';
import { webhookSettings } from './webhooks';

/** A claim's lease in seconds: at least 2 (renewal every third of it), at most 60 (a dead holder blocks its work that long). */
const lease = (fallback: number) => z.coerce.number().int().min(2).max(60).default(fallback);

const S3_KEYS_TOGETHER = (other: string) =>
  `is required with ${other}: set both static S3 keys, or neither to use the AWS default credential chain (IRSA, EKS Pod Identity, instance role, AWS_* variables)`;

const RECEIPT_FILES_TOGETHER = (other: string) =>
  `is required with ${other}: receipts are signed with the key of the certificate they carry; set both, or neither to answer receipts with 501`;

/** Every setting of the content-service, read from the environment once at start-up. */
export function loadConfig(source: NodeJS.ProcessEnv = process.env) {
  refuseRemoved(source, {
    INTERNAL_SECRET:
      'set SESSION_SERVICE_INTERNAL_SECRET instead (the session-service gives each caller its own secret)',
  });
  const c = parseEnv(
    {
      ...serviceSettings({ port: 8081, adminPort: 9465, shutdownGraceMs: 60_000 }),
      S3_ENDPOINT: env.url().optional(),
      S3_REGION: z.string().default('us-east-1'),
      S3_BUCKET: z.string().min(3),
      /**
       * Static S3 keys, both or neither. Without them the AWS SDK's default credential chain is
       * used (environment, shared files, web identity / IRSA, EKS Pod Identity, ECS, instance role).
       */
      S3_ACCESS_KEY_ID: z.string().min(1).optional(),
      S3_SECRET_ACCESS_KEY: z.string().min(1).optional(),
      S3_FORCE_PATH_STYLE: env.bool(true),
      S3_CREATE_BUCKET: env.bool(false),
      JWT_ISSUER: z.string().min(1).optional(),
      JWT_AUDIENCE: z.string().min(1).default('content-api'),
      JWT_JWKS_URL: env.url().optional(),
      JWT_JWKS_FILE: z.string().min(1).optional(),
      JWT_ALGORITHMS: env.list('RS256,ES256,EdDSA'),
      JWT_OWNERS_CLAIM: z.string().min(1).default('owners'),
      /** A verified Bearer token is answered from memory this long (never past its exp); 0: verified on every request. */
      JWT_CACHE_SECONDS: env.int(60, 0),
      // auth.sid is checked at the session-service's /internal/sessions/validate (the secret: its INTERNAL_SECRET_CONTENT_SERVICE).
      ...optionalCalledService('SESSION_SERVICE'),
      /**
       * Redis: the bookkeeping of unfinished uploads (keys `up:<bucket>:*`), and with
       * SESSION_SERVICE_URL the session-service's cache of sid lookups (read only). Run it with an
       * append-only file: what it acknowledged of an upload must survive its restart.
       */
      ...redisSettings(),
      UPLOAD_TTL_SECONDS: env.int(7 * 24 * 3600, 1),
      /**
       * Leases of the claims (part write, assembly, completion): renewed every third
       * of it while their holder works, so they need not cover a slow transfer; a dead holder's
       * claim is taken over at most this long after its last renewal.
       */
      COMPLETION_LEASE_SECONDS: lease(10),
      ASSEMBLY_LEASE_SECONDS: lease(10),
      /** Requests per owner on /v1 in RATE_LIMIT_PER_OWNER_SECONDS, across replicas (Redis); 0: no limit. */
      RATE_LIMIT_PER_OWNER_POINTS: env.int(0, 0),
      RATE_LIMIT_PER_OWNER_SECONDS: env.int(1, 1),
      /**
       * Per-owner quotas (off: nothing checked or counted). On: each new content is checked against
       * its owner's limits (set with `pnpm admin quota set`), else these defaults (0: no limit).
       */
      QUOTAS: env.bool(false),
      QUOTA_STORAGE_BYTES: env.int(0, 0),
      QUOTA_UNFINISHED_UPLOADS: env.int(0, 0),
      SWEEP_INTERVAL_SECONDS: env.int(300, 1),
      SWEEP_BATCH_SIZE: env.int(100, 1),
      REQUEST_IDLE_TIMEOUT_MS: env.int(120_000, 1000),
      /**
       * The platform's receipt signing key (PEM, unencrypted; RSA of 2048 bits or more, or EC
       * P-256) and its certificate (PEM, the signer first, then any intermediates), both or
       * neither: without them GET .../receipt answers 501. Read and checked at start-up.
       */
      RECEIPT_SIGNING_KEY_FILE: z.string().min(1).optional(),
      RECEIPT_CERTIFICATE_FILE: z.string().min(1).optional(),
      ...webhookSettings(),
      /** Longest wait for S3's answer to a call that streams no body (CompleteMultipartUpload aside). */
      S3_TIMEOUT_MS: env.int(3_000, 100),
      /** A streamed part or download fails once S3 makes no progress for this long. */
      S3_STALL_TIMEOUT_MS: env.int(3_000, 100),
      /**
       * Direct transfer (off unless the operator turns it on): presigned UploadPart URLs for parts
       * of an upload, and 307 redirects to presigned GetObject URLs for downloads that ask.
       */
      DIRECT_TRANSFER: z
        .enum(['on', 'off', 'true', 'false', '1', '0', 'yes', 'no'])
        .default('off')
        .transform((v) => v === 'on' || v === 'true' || v === '1' || v === 'yes'),
      /** The S3 address clients reach (presigned URLs name it); S3_ENDPOINT when not set. */
      DIRECT_S3_ENDPOINT: env.url().optional(),
      /** How long a presigned URL is valid, in seconds (1 second to 1 hour). */
      DIRECT_URL_SECONDS: z.coerce.number().int().min(1).max(3600).default(300),
    },
    source,
  );
  // Settings that only work together: a half-configured credential would fail on every request instead of at start-up.
  if (c.SESSION_SERVICE_URL && !c.SESSION_SERVICE_INTERNAL_SECRET) {
    throw new ConfigError(
      'SESSION_SERVICE_INTERNAL_SECRET',
      'is required with SESSION_SERVICE_URL: the session-service answers its internal endpoint only to callers that send it',
    );
  }
  if (c.JWT_ISSUER && !c.JWT_JWKS_URL && !c.JWT_JWKS_FILE) {
    throw new ConfigError(
      'JWT_JWKS_URL',
      'set JWT_JWKS_URL or JWT_JWKS_FILE with JWT_ISSUER: Bearer tokens cannot be verified without the issuer keys',
    );
  }
  if (c.S3_ACCESS_KEY_ID && !c.S3_SECRET_ACCESS_KEY)
    throw new ConfigError('S3_SECRET_ACCESS_KEY', S3_KEYS_TOGETHER('S3_ACCESS_KEY_ID'));
  if (c.S3_SECRET_ACCESS_KEY && !c.S3_ACCESS_KEY_ID)
    throw new ConfigError('S3_ACCESS_KEY_ID', S3_KEYS_TOGETHER('S3_SECRET_ACCESS_KEY'));
  if (c.RECEIPT_SIGNING_KEY_FILE && !c.RECEIPT_CERTIFICATE_FILE)
    throw new ConfigError('RECEIPT_CERTIFICATE_FILE', RECEIPT_FILES_TOGETHER('RECEIPT_SIGNING_KEY_FILE'));
  if (c.RECEIPT_CERTIFICATE_FILE && !c.RECEIPT_SIGNING_KEY_FILE)
    throw new ConfigError('RECEIPT_SIGNING_KEY_FILE', RECEIPT_FILES_TOGETHER('RECEIPT_CERTIFICATE_FILE'));
  if (!c.JWT_ISSUER && (c.JWT_JWKS_URL || c.JWT_JWKS_FILE))
    throw new ConfigError('JWT_ISSUER', 'is required with JWT_JWKS_URL or JWT_JWKS_FILE');
  return { ...c, REDIS_TARGET: redisTarget(c) };
}

export type ContentServiceConfig = ReturnType<typeof loadConfig>;
