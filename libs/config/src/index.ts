import { z } from 'zod';

export { z };

/** Thrown when an environment variable is missing or malformed; the message names it. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  readonly code = 'CP_ERR_CONFIG';
  constructor(
    readonly variable: string,
    problem: string,
  ) {
    super(`configuration: ${variable}: ${problem}`);
  }
}

/**
 * Parses the environment once against a schema whose keys are variable names. Libraries never
 * read process.env themselves; each service's main.ts calls this and passes typed values on.
 */
export function parseEnv<S extends z.ZodRawShape>(
  shape: S,
  env: NodeJS.ProcessEnv = process.env,
): z.infer<z.ZodObject<S>> {
  const result = z.object(shape).safeParse(env);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const variable = String(issue.path[0] ?? '(environment)');
  const raw = env[variable];
  // Secrets and URLs that may carry a password are named, never echoed.
  const shown = SECRET_NAME.test(variable) ? '(hidden)' : JSON.stringify(raw);
  const problem = raw === undefined ? 'is required' : `invalid value ${shown}: ${issue.message}`;
  throw new ConfigError(variable, problem);
}

const SECRET_NAME = /SECRET|PASSWORD|TOKEN|_KEY|MONGODB_URL|REDIS_URL/;

/**
 * Refuses variables a service no longer reads, so that an old setting is not silently ignored
 * (the message says what replaces it).
 */
export function refuseRemoved(env: NodeJS.ProcessEnv, removed: Record<string, string>): void {
  for (const [variable, instead] of Object.entries(removed)) {
    if (env[variable] !== undefined) throw new ConfigError(variable, `is no longer read: ${instead}`);
  }
}

/** Reusable variable types. */
export const env = {
  port: (fallback: number) => z.coerce.number().int().min(0).max(65535).default(fallback),
  int: (fallback: number, min = 0) => z.coerce.number().int().min(min).default(fallback),
  url: () => z.url(),
  /** A secret another service sends or checks (`x-internal-secret`). */
  secret: () => z.string().min(16, 'must be at least 16 characters'),
  bool: (fallback: boolean) =>
    z
      .enum(['true', 'false', '1', '0', 'yes', 'no'])
      .default(fallback ? 'true' : 'false')
      .transform((v) => v === 'true' || v === '1' || v === 'yes'),
  /** Comma-separated; `fallback` is parsed like a value (zod 4 returns a `.default()` as is, untransformed). */
  list: (fallback = '') =>
    z
      .string()
      .default(fallback)
      .transform((v) =>
        v
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean),
      ),
  logLevel: () => z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  mongoUrl: () => z.string().regex(/^mongodb(\+srv)?:\/\//, 'must be a mongodb:// URL'),
  /** A MongoDB database's name. */
  database: (fallback: string) => z.string().min(1).default(fallback),
  redisUrl: () => z.string().regex(/^rediss?:\/\//, 'must be a redis:// URL'),
};

/**
 * What every service reads: where it listens (its API on PORT; /readyz, /healthz/deps and /metrics
 * on ADMIN_PORT only, a port no route or ingress exposes), how much it logs, and how long
 * in-flight requests may run after SIGTERM.
 */
export function serviceSettings(defaults: { port: number; adminPort: number; shutdownGraceMs: number }) {
  return {
    PORT: env.port(defaults.port),
    ADMIN_PORT: env.port(defaults.adminPort),
    HOST: z.string().default('0.0.0.0'),
    LOG_LEVEL: env.logLevel(),
    /** The audit trail's own stream: `stderr`, `stdout`, `off`, or a file path (appended to). */
    AUDIT_LOG: z.string().min(1).default('stderr'),
    SHUTDOWN_GRACE_MS: env.int(defaults.shutdownGraceMs, 0),
    ...tracingSettings(),
  };
}

/**
 * OpenTelemetry traces, by the standard OTEL_* variables (the subset the services honour): off
 * unless OTEL_TRACES_EXPORTER=otlp or an OTLP endpoint is set. Spans go as OTLP/HTTP JSON.
 */
export function tracingSettings() {
  return {
    OTEL_SDK_DISABLED: env.bool(false),
    OTEL_TRACES_EXPORTER: z.enum(['otlp', 'none']).optional(),
    OTEL_EXPORTER_OTLP_ENDPOINT: env.url().optional(),
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: env.url().optional(),
    OTEL_EXPORTER_OTLP_PROTOCOL: z.enum(['http/json']).optional(),
    OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: z.enum(['http/json']).optional(),
    OTEL_SERVICE_NAME: z.string().min(1).optional(),
    OTEL_TRACES_SAMPLER: z
      .enum([
        'always_on',
        'always_off',
        'traceidratio',
        'parentbased_always_on',
        'parentbased_always_off',
        'parentbased_traceidratio',
      ])
      .default('parentbased_always_on'),
    OTEL_TRACES_SAMPLER_ARG: z.coerce.number().min(0).max(1).default(1),
    /** How long finished spans wait to be sent together (ms). */
    OTEL_BSP_SCHEDULE_DELAY: env.int(5000, 0),
  };
}

type CalledServiceSettings<P extends string, T> = Record<`${P}_URL` | `${P}_INTERNAL_SECRET`, T>;

/**
 * Another service this one calls on its /internal/* routes: `<P>_URL` and `<P>_INTERNAL_SECRET`,
 * the secret sent as `x-internal-secret` (the called service's `INTERNAL_SECRET_<this service>`).
 */
export function calledService<P extends string>(prefix: P): CalledServiceSettings<P, z.ZodString> {
  return { [`${prefix}_URL`]: env.url(), [`${prefix}_INTERNAL_SECRET`]: env.secret() } as CalledServiceSettings<
    P,
    z.ZodString
  >;
}

/** `calledService` for a service that may run without that one (both variables optional). */
export function optionalCalledService<P extends string>(
  prefix: P,
): CalledServiceSettings<P, z.ZodOptional<z.ZodString>> {
  return {
    [`${prefix}_URL`]: env.url().optional(),
    [`${prefix}_INTERNAL_SECRET`]: env.secret().optional(),
  } as CalledServiceSettings<P, z.ZodOptional<z.ZodString>>;
}

/** The service's MongoDB and its own database there. */
export function mongoSettings(defaultDatabase: string) {
  return {
    MONGODB_URL: env.mongoUrl(),
    MONGODB_DATABASE: env.database(defaultDatabase),
    /** Longest wait for MongoDB: server selection, connecting, and one operation's answer. */
    MONGODB_TIMEOUT_MS: env.int(2_000, 100),
  };
}

/**
 * Where a service's Redis is: `REDIS_URL`, or Sentinel (`REDIS_SENTINELS`, a comma-separated
 * host:port list, with `REDIS_SENTINEL_MASTER`, and the service's ACL user in `REDIS_USERNAME` /
 * `REDIS_PASSWORD`). Check the combination with `redisTarget` after parsing.
 */
export function redisSettings() {
  return {
    REDIS_URL: env.redisUrl().optional(),
    REDIS_SENTINELS: env.list(),
    REDIS_SENTINEL_MASTER: z.string().min(1).optional(),
    REDIS_USERNAME: z.string().min(1).optional(),
    REDIS_PASSWORD: z.string().min(1).optional(),
    /** For Sentinels that require a password themselves (`requirepass` in their configuration). */
    REDIS_SENTINEL_PASSWORD: z.string().min(1).optional(),
    /** Longest wait for one Redis command's answer. */
    REDIS_TIMEOUT_MS: env.int(1_000, 50),
  };
}

type RedisSettings = z.output<z.ZodObject<ReturnType<typeof redisSettings>>>;

/** What libs/redis connects to: a URL, or Sentinel. */
export type RedisTarget =
  | string
  | {
      sentinels: { host: string; port: number }[];
      master: string;
      username?: string;
      password?: string;
      sentinelPassword?: string;
    };

/**
 * The Redis a parsed configuration names, or null when none is set (an error unless `optional`);
 * a half-given Sentinel setting stops start-up with the variable that is missing or wrong.
 */
export function redisTarget(c: RedisSettings): RedisTarget;
export function redisTarget(c: RedisSettings, options: { optional: boolean }): RedisTarget | null;
export function redisTarget(c: RedisSettings, { optional = false } = {}): RedisTarget | null {
  if (c.REDIS_SENTINELS.length === 0) {
    for (const variable of [
      'REDIS_SENTINEL_MASTER',
      'REDIS_USERNAME',
      'REDIS_PASSWORD',
      'REDIS_SENTINEL_PASSWORD',
    ] as const) {
      if (c[variable] !== undefined)
        throw new ConfigError(variable, 'is read only with REDIS_SENTINELS (with REDIS_URL, put the user in the URL)');
    }
    if (c.REDIS_URL) return c.REDIS_URL;
    if (optional) return null;
    throw new ConfigError('REDIS_URL', 'is required (or REDIS_SENTINELS with REDIS_SENTINEL_MASTER)');
  }
  if (c.REDIS_URL) throw new ConfigError('REDIS_URL', 'set either REDIS_URL or REDIS_SENTINELS, not both');
  if (!c.REDIS_SENTINEL_MASTER)
    throw new ConfigError(
      'REDIS_SENTINEL_MASTER',
      'is required with REDIS_SENTINELS: the name the Sentinels monitor the master under',
    );
  if (c.REDIS_PASSWORD && !c.REDIS_USERNAME)
    throw new ConfigError('REDIS_USERNAME', 'is required with REDIS_PASSWORD: each service has its own Redis user');
  const sentinels = c.REDIS_SENTINELS.map((entry) => {
    const m = /^(\[[0-9a-fA-F:.]+\]|[^\s:[\]]+):(\d{1,5})$/.exec(entry);
    const port = Number(m?.[2]);
    if (!m || port < 1 || port > 65535)
      throw new ConfigError('REDIS_SENTINELS', `entry ${JSON.stringify(entry)} is not host:port`);
    return { host: m[1]!.replace(/^\[(.*)\]$/, '$1'), port };
  });
  return {
    sentinels,
    master: c.REDIS_SENTINEL_MASTER,
    username: c.REDIS_USERNAME,
    password: c.REDIS_PASSWORD,
    sentinelPassword: c.REDIS_SENTINEL_PASSWORD,
  };
}

/** The rate-limit variables, for a service's config schema. A limit with 0 points is off. */
export function rateLimitSettings() {
  return {
    RATE_LIMIT_ENABLED: env.bool(true),
    /** Requests per api key in RATE_LIMIT_PER_KEY_SECONDS. */
    RATE_LIMIT_PER_KEY_POINTS: env.int(60, 0),
    RATE_LIMIT_PER_KEY_SECONDS: env.int(60, 1),
    /** Requests per client address in RATE_LIMIT_PER_ADDRESS_SECONDS. */
    RATE_LIMIT_PER_ADDRESS_POINTS: env.int(30, 0),
    RATE_LIMIT_PER_ADDRESS_SECONDS: env.int(60, 1),
    /** Proxies in front of the service that append to X-Forwarded-For (the gateway, an ingress). */
    TRUSTED_PROXY_HOPS: env.int(1, 0),
  };
}

/**
 * MongoDB driver options that bound every wait on the server to about `ms`: finding a server,
 * connecting, and one operation's answer (a server that stopped answering on an open
 * connection). A request then fails with a driver error the services answer as 503. The driver's
 * own retry of a read is off: after a timeout it waited `ms` again on the same hung server
 * (measured: 4 s instead of 2 s with FerretDB stopped), and the 503 tells the client to retry.
 */
export function mongoTimeouts(ms: number) {
  return { serverSelectionTimeoutMS: ms, connectTimeoutMS: ms, socketTimeoutMS: ms, retryReads: false };
}
