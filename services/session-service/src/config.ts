import {
  ConfigError,
  env,
  mongoSettings,
  parseEnv,
  rateLimitSettings,
  redisSettings,
  redisTarget,
  refuseRemoved,
  serviceSettings,
} from '@cp/config';

const DAY = 24 * 3600;

const NO_CALL_BACK =
  'the session-service no longer calls the auth-service: it reads api keys and registrations from REGISTRY_MONGODB_DATABASE; remove it';

/** Every setting of the session-service, read from the environment once at start-up. */
export function loadConfig(source: NodeJS.ProcessEnv = process.env) {
  refuseRemoved(source, {
    INTERNAL_SECRET:
      'set INTERNAL_SECRET_AUTH_SERVICE and INTERNAL_SECRET_CONTENT_SERVICE instead (one secret per caller)',
    AUTH_SERVICE_URL: NO_CALL_BACK,
    AUTH_SERVICE_INTERNAL_SECRET: NO_CALL_BACK,
  });
  const c = parseEnv(
    {
      ...serviceSettings({ port: 8083, adminPort: 9467, shutdownGraceMs: 30_000 }),
      ...mongoSettings('sessions'),
      ...redisSettings(),
      /** The auth-service's secret here: it may create sessions and validate sids (/internal/sessions). */
      INTERNAL_SECRET_AUTH_SERVICE: env.secret(),
      /** The content-service's secret here: it may only validate sids (/internal/sessions/validate). */
      INTERNAL_SECRET_CONTENT_SERVICE: env.secret(),
      /**
       * The auth-service's database on the same MongoDB: api keys and registrations are read there
       * at refresh (read-only; the auth-service's MONGODB_DATABASE).
       */
      REGISTRY_MONGODB_DATABASE: env.database('auth'),
      SID_TTL_SECONDS: env.int(30 * DAY, 1),
      REFRESH_TTL_SECONDS: env.int(45 * DAY, 1),
      /** No refresh past this long after the sign-in (and no sid or refresh token outlives it). */
      SESSION_MAX_LIFETIME_SECONDS: env.int(90 * DAY, 1),
      /** A retry with a just-rotated refresh token (and its sid) gets the same new pair for this long. */
      REFRESH_GRACE_SECONDS: env.int(30, 0),
      /** Longest time a lookup read from MongoDB stays in Redis (also a rotation's tombstone and a bypass mark); sessions the service writes stay as long as their sid. */
      CACHE_TTL_SECONDS: env.int(60, 1),
      SWEEP_INTERVAL_SECONDS: env.int(600, 1),
      ...rateLimitSettings(),
    },
    source,
  );
  if (c.INTERNAL_SECRET_AUTH_SERVICE === c.INTERNAL_SECRET_CONTENT_SERVICE) {
    throw new ConfigError(
      'INTERNAL_SECRET_CONTENT_SERVICE',
      'must differ from INTERNAL_SECRET_AUTH_SERVICE: the secret tells the callers apart',
    );
  }
  if (c.REGISTRY_MONGODB_DATABASE === c.MONGODB_DATABASE) {
    throw new ConfigError(
      'REGISTRY_MONGODB_DATABASE',
      "must name the auth-service's database, not the session-service's own (MONGODB_DATABASE)",
    );
  }
  return { ...c, REDIS_TARGET: redisTarget(c) };
}

export type SessionServiceConfig = ReturnType<typeof loadConfig>;
