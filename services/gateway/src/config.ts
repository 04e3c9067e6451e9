import { ConfigError, env, parseEnv, serviceSettings, z } from '@cp/config';
import { originEntryProblem } from './http/cors';

export function loadConfig(source: NodeJS.ProcessEnv = process.env) {
  const config = parseEnv(
    {
      ...serviceSettings({ port: 8080, adminPort: 9464, shutdownGraceMs: 60_000 }),
      CONTENT_SERVICE_URL: env.url(),
      AUTH_SERVICE_URL: env.url().optional(),
      SESSION_SERVICE_URL: env.url().optional(),
      /** Longest silence allowed from an upstream before the request is given up (slow links, big parts). */
      UPSTREAM_TIMEOUT_MS: env.int(300_000, 1000),
      /** The same for the auth- and session-service, whose answers are small: a stuck one is given up sooner. */
      SIGNIN_UPSTREAM_TIMEOUT_MS: env.int(30_000, 1000),
      /** Longest silence allowed from a client mid-request. */
      CLIENT_IDLE_TIMEOUT_MS: env.int(120_000, 1000),
      MAX_HEADER_BYTES: env.int(16 * 1024, 1024),
      /**
       * A client's W3C traceparent/tracestate: `restart` starts a new trace at the gateway (linked to
       * the client's), `trust` continues the client's trace (a client inside the same trust domain).
       */
      TRACE_INCOMING_CONTEXT: z.enum(['restart', 'trust']).default('restart'),
      /** Origins whose pages may call this API from a browser (`https://app.example.com`, or `*`); none: CORS off. */
      CORS_ALLOWED_ORIGINS: env.list(),
      /** How long a browser may keep a preflight's answer, in seconds. */
      CORS_MAX_AGE_SECONDS: env.int(600),
      /** Whether cookies may go with cross-origin requests (never with `*`). */
      CORS_ALLOW_CREDENTIALS: env.bool(false),
    },
    source,
  );
  for (const origin of config.CORS_ALLOWED_ORIGINS) {
    const problem = originEntryProblem(origin);
    if (problem) throw new ConfigError('CORS_ALLOWED_ORIGINS', `"${origin}" ${problem}`);
  }
  if (config.CORS_ALLOW_CREDENTIALS && config.CORS_ALLOWED_ORIGINS.includes('*'))
    throw new ConfigError(
      'CORS_ALLOW_CREDENTIALS',
      'cannot be true while CORS_ALLOWED_ORIGINS holds "*": name the origins',
    );
  return config;
}

export type GatewayConfig = ReturnType<typeof loadConfig>;
