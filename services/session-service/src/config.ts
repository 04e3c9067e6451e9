import { ConfigError, env, parseEnv, rateLimitSettings, refuseRemoved, z } from '@cp/config';

const DAY = 24 * 3600;

/** Every setting of the session-service, read from the environment once at start-up. */
export function loadConfig(source: NodeJS.ProcessEnv = process.env) {
  refuseRemoved(source, { INTERNAL_SECRET: 'set INTERNAL_SECRET_AUTH_SERVICE, INTERNAL_SECRET_CONTENT_SERVICE and AUTH_SERVICE_INTERNAL_SECRET instead (one secret per caller)' });
  const c = parseEnv(
    {
      PORT: env.port(8083),
      HOST: z.string().default('0.0.0.0'),
      LOG_LEVEL: env.logLevel(),
      MONGODB_URL: z.string().regex(/^mongodb(\+srv)?:\/\//, 'must be a mongodb:// URL'),
      MONGODB_DATABASE: z.string().min(1).default('sessions'),
      /** Longest wait for MongoDB: server selection, connecting, and one operation's answer. */
      MONGODB_TIMEOUT_MS: env.int(2_000, 100),
      /** Longest wait for one Redis command's answer. */
      REDIS_TIMEOUT_MS: env.int(1_000, 50),
      REDIS_URL: z.string().regex(/^rediss?:\/\//, 'must be a redis:// URL'),
      /** The auth-service's secret here: it may create sessions and validate sids (/internal/sessions). */
      INTERNAL_SECRET_AUTH_SERVICE: env.secret(),
      /** The content-service's secret here: it may only validate sids (/internal/sessions/validate). */
      INTERNAL_SECRET_CONTENT_SERVICE: env.secret(),
      /** Where api keys presented to /sessions/v5.x/sessions/refresh are checked. */
      AUTH_SERVICE_URL: env.url(),
      /** Sent to the auth-service's /internal/* (its INTERNAL_SECRET_SESSION_SERVICE). */
      AUTH_SERVICE_INTERNAL_SECRET: env.secret(),
      SID_TTL_SECONDS: env.int(30 * DAY, 1),
      REFRESH_TTL_SECONDS: env.int(45 * DAY, 1),
      /** No refresh past this long after the sign-in (and no sid or refresh token outlives it). */
      SESSION_MAX_LIFETIME_SECONDS: env.int(90 * DAY, 1),
      /** A retry with a just-rotated refresh token (and its sid) gets the same new pair for this long. */
      REFRESH_GRACE_SECONDS: env.int(30, 0),
      /** Longest time a sid lookup stays in Redis (also the tombstone lifetime). */
      CACHE_TTL_SECONDS: env.int(60, 1),
      SWEEP_INTERVAL_SECONDS: env.int(600, 1),
      SHUTDOWN_GRACE_MS: env.int(30_000, 0),
      ...rateLimitSettings(),
    },
    source,
  );
  if (c.INTERNAL_SECRET_AUTH_SERVICE === c.INTERNAL_SECRET_CONTENT_SERVICE) {
    throw new ConfigError('INTERNAL_SECRET_CONTENT_SERVICE', 'must differ from INTERNAL_SECRET_AUTH_SERVICE: the secret tells the callers apart');
  }
  return c;
}

export type SessionServiceConfig = ReturnType<typeof loadConfig>;
