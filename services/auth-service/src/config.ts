import {
  calledService,
  env,
  mongoSettings,
  parseEnv,
  rateLimitSettings,
  redisSettings,
  redisTarget,
  refuseRemoved,
  serviceSettings,
} from '@cp/config';

/** Every setting of the auth-service, read from the environment once at start-up. */
export function loadConfig(source: NodeJS.ProcessEnv = process.env) {
  refuseRemoved(source, {
    INTERNAL_SECRET: 'set SESSION_SERVICE_INTERNAL_SECRET instead (one secret per caller)',
    INTERNAL_SECRET_SESSION_SERVICE:
      'nothing calls the auth-service any more (the session-service reads api keys and registrations from this database): remove it',
  });
  const c = parseEnv(
    {
      ...serviceSettings({ port: 8082, adminPort: 9466, shutdownGraceMs: 30_000 }),
      // The auth-service's own database: users, certificates, trusted roots, api keys (the
      // session-service reads the users, certificates and api keys here too, at refresh).
      ...mongoSettings('auth'),
      ...redisSettings(),
      // Sessions are created at the session-service's /internal/sessions (the secret: its INTERNAL_SECRET_AUTH_SERVICE).
      ...calledService('SESSION_SERVICE'),
      /** Base of Link.Href (what clients reach through the gateway); derived from the request when unset. */
      PUBLIC_BASE_URL: env.url().optional(),
      RND_TTL_SECONDS: env.int(600, 1),
      RND_MAX_TRIES: env.int(5, 1),
      ...rateLimitSettings(),
    },
    source,
  );
  return { ...c, REDIS_TARGET: redisTarget(c) };
}

export type AuthServiceConfig = ReturnType<typeof loadConfig>;
