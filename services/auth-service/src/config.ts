import { env, parseEnv, rateLimitSettings, refuseRemoved, z } from '@cp/config';

/** Every setting of the auth-service, read from the environment once at start-up. */
export function loadConfig(source: NodeJS.ProcessEnv = process.env) {
  refuseRemoved(source, { INTERNAL_SECRET: 'set INTERNAL_SECRET_SESSION_SERVICE and SESSION_SERVICE_INTERNAL_SECRET instead (one secret per caller)' });
  return parseEnv(
    {
      PORT: env.port(8082),
      HOST: z.string().default('0.0.0.0'),
      LOG_LEVEL: env.logLevel(),
      MONGODB_URL: z.string().regex(/^mongodb(\+srv)?:\/\//, 'must be a mongodb:// URL'),
      /** The auth-service's own database: users, certificates, trusted roots, api keys. */
      MONGODB_DATABASE: z.string().min(1).default('auth'),
      /** Longest wait for MongoDB: server selection, connecting, and one operation's answer. */
      MONGODB_TIMEOUT_MS: env.int(2_000, 100),
      /** Longest wait for one Redis command's answer. */
      REDIS_TIMEOUT_MS: env.int(1_000, 50),
      REDIS_URL: z.string().regex(/^rediss?:\/\//, 'must be a redis:// URL'),
      SESSION_SERVICE_URL: env.url(),
      /** Sent to the session-service's /internal/sessions (its INTERNAL_SECRET_AUTH_SERVICE). */
      SESSION_SERVICE_INTERNAL_SECRET: env.secret(),
      /** The session-service's secret here: it may check api keys and registrations (/internal/api-keys, /internal/registrations). */
      INTERNAL_SECRET_SESSION_SERVICE: env.secret(),
      /** Base of Link.Href (what clients reach through the gateway); derived from the request when unset. */
      PUBLIC_BASE_URL: env.url().optional(),
      RND_TTL_SECONDS: env.int(600, 1),
      RND_MAX_TRIES: env.int(5, 1),
      SHUTDOWN_GRACE_MS: env.int(30_000, 0),
      ...rateLimitSettings(),
    },
    source,
  );
}

export type AuthServiceConfig = ReturnType<typeof loadConfig>;
