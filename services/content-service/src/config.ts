import { ConfigError, env, parseEnv, refuseRemoved, z } from '@cp/config';

/** Every setting of the content-service, read from the environment once at start-up. */
export function loadConfig(source: NodeJS.ProcessEnv = process.env) {
  refuseRemoved(source, { INTERNAL_SECRET: 'set SESSION_SERVICE_INTERNAL_SECRET instead (the session-service gives each caller its own secret)' });
  const c = parseEnv(
    {
      PORT: env.port(8081),
      HOST: z.string().default('0.0.0.0'),
      LOG_LEVEL: env.logLevel(),
      MONGODB_URL: z.string().regex(/^mongodb(\+srv)?:\/\//, 'must be a mongodb:// URL'),
      MONGODB_DATABASE: z.string().min(1).default('content'),
      S3_ENDPOINT: env.url().optional(),
      S3_REGION: z.string().default('us-east-1'),
      S3_BUCKET: z.string().min(3),
      S3_ACCESS_KEY_ID: z.string().min(1),
      S3_SECRET_ACCESS_KEY: z.string().min(1),
      S3_FORCE_PATH_STYLE: env.bool(true),
      S3_CREATE_BUCKET: env.bool(false),
      JWT_ISSUER: z.string().min(1).optional(),
      JWT_AUDIENCE: z.string().min(1).default('content-api'),
      JWT_JWKS_URL: env.url().optional(),
      JWT_JWKS_FILE: z.string().min(1).optional(),
      JWT_ALGORITHMS: env.list().default('RS256,ES256,EdDSA'),
      JWT_OWNERS_CLAIM: z.string().min(1).default('owners'),
      SESSION_SERVICE_URL: env.url().optional(),
      /** The session-service's Redis: auth.sid answered from its cache of sid lookups when it can (used only with SESSION_SERVICE_URL). */
      REDIS_URL: z.string().regex(/^rediss?:\/\//, 'must be a redis:// URL').optional(),
      /** Sent to the session-service's /internal/sessions/validate (its INTERNAL_SECRET_CONTENT_SERVICE). */
      SESSION_SERVICE_INTERNAL_SECRET: env.secret().optional(),
      UPLOAD_TTL_SECONDS: env.int(7 * 24 * 3600, 1),
      COMPLETION_LEASE_SECONDS: env.int(120, 5),
      ASSEMBLY_LEASE_SECONDS: env.int(600, 5),
      SWEEP_INTERVAL_SECONDS: env.int(300, 1),
      SWEEP_BATCH_SIZE: env.int(100, 1),
      REQUEST_IDLE_TIMEOUT_MS: env.int(120_000, 1000),
      /** Longest wait for MongoDB: server selection, connecting, and one operation's answer. */
      MONGODB_TIMEOUT_MS: env.int(2_000, 100),
      /** Longest wait for one Redis command's answer. */
      REDIS_TIMEOUT_MS: env.int(1_000, 50),
      /** Longest wait for S3's answer to a call that streams no body (CompleteMultipartUpload aside). */
      S3_TIMEOUT_MS: env.int(3_000, 100),
      /** A streamed part or download fails once S3 makes no progress for this long. */
      S3_STALL_TIMEOUT_MS: env.int(3_000, 100),
      SHUTDOWN_GRACE_MS: env.int(60_000, 0),
    },
    source,
  );
  // Settings that only work together: a half-configured credential would fail on every request instead of at start-up.
  if (c.SESSION_SERVICE_URL && !c.SESSION_SERVICE_INTERNAL_SECRET) {
    throw new ConfigError('SESSION_SERVICE_INTERNAL_SECRET', 'is required with SESSION_SERVICE_URL: the session-service answers its internal endpoint only to callers that send it');
  }
  if (c.JWT_ISSUER && !c.JWT_JWKS_URL && !c.JWT_JWKS_FILE) {
    throw new ConfigError('JWT_JWKS_URL', 'set JWT_JWKS_URL or JWT_JWKS_FILE with JWT_ISSUER: Bearer tokens cannot be verified without the issuer keys');
  }
  if (!c.JWT_ISSUER && (c.JWT_JWKS_URL || c.JWT_JWKS_FILE)) throw new ConfigError('JWT_ISSUER', 'is required with JWT_JWKS_URL or JWT_JWKS_FILE');
  return c;
}

export type ContentServiceConfig = ReturnType<typeof loadConfig>;
