import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ConfigError } from '@cp/config';
import { createLogger, openAuditLog, type AuditLog, type Logger } from '@cp/logging';
import { startTracing, traceLogFields, tracingOptions, type TracingSettings } from '@cp/tracing';
import type { ReadinessCheck } from './healthRoutes';
import { runServer, type RunServerOptions } from './runServer';
import { adminApp } from './serviceApp';
import type { ServiceMetrics } from './ServiceMetrics';

/** The settings every service reads (see `serviceSettings` in @cp/config). */
export interface BaseServiceConfig extends TracingSettings {
  PORT: number;
  /** /readyz, /healthz/deps and /metrics: never on PORT, so no route to PORT exposes them. */
  ADMIN_PORT: number;
  HOST: string;
  LOG_LEVEL: string;
  AUDIT_LOG: string;
  SHUTDOWN_GRACE_MS: number;
}

/** What `build` gets: the parsed config, the service's logger, and whether shutdown has begun (for /readyz). */
export interface ServiceContext<C> {
  config: C;
  logger: Logger;
  /** The audit trail (AUDIT_LOG): who did what, one JSON line per record, apart from the log. */
  audit: AuditLog;
  isDraining: () => boolean;
}

/** A backing server's connection pool: its check for /healthz/deps, and how to close it at shutdown. */
export interface Backend {
  readiness: ReadinessCheck;
  close(): Promise<void>;
}

/** What a service's `build` hands back: its app, its pools, and server options of its own. */
export interface BuiltService {
  app: RequestListener;
  /** What the admin port serves: the metrics registry and the checks of /healthz/deps (besides the backends'). */
  admin: { metrics: ServiceMetrics; readiness?: ReadinessCheck[] };
  /** Checked by /healthz/deps; closed in this order once the server has stopped and `onShutdown` is done. */
  backends?: Backend[];
  /** Called once the server has stopped taking requests, before the backends close. */
  onShutdown?: () => Promise<void>;
  server?: Omit<RunServerOptions, 'port' | 'host' | 'logger' | 'shutdownGraceMs' | 'onDraining' | 'onShutdown'>;
}

export interface StartServiceOptions<C extends BaseServiceConfig> {
  /** Names the logger and prefixes a start-up failure on stderr. */
  name: string;
  loadConfig: () => C;
  /** Composes the service's own dependencies (connections, stores, app). */
  build: (context: ServiceContext<C>) => Promise<BuiltService>;
}

/**
 * The start-up every service shares: config, logger, tracing (OTEL_*, off unless set), its dependencies, then `runServer` with
 * draining and shutdown hooks, and the admin port (/readyz, /healthz/deps, /metrics) once the API
 * port listens, so that a ready answer means the API takes connections. The admin port stays open
 * while the API drains (its /readyz answers 503 then) and closes before the pools do. A failure
 * before listening (a ConfigError by its message alone, anything else with its stack) is printed
 * and the process exits 1.
 */
export function startService<C extends BaseServiceConfig>(options: StartServiceOptions<C>): void {
  start(options).catch((error: unknown) => {
    process.stderr.write(
      `${options.name}: ${error instanceof ConfigError ? error.message : String((error as Error)?.stack ?? error)}\n`,
    );
    process.exit(1);
  });
}

async function start<C extends BaseServiceConfig>({ name, loadConfig, build }: StartServiceOptions<C>): Promise<void> {
  const config = loadConfig();
  if (config.ADMIN_PORT !== 0 && config.ADMIN_PORT === config.PORT) {
    throw new ConfigError(
      'ADMIN_PORT',
      `must differ from PORT (${config.PORT}): metrics and readiness are kept off the API's port`,
    );
  }
  const traced = tracingOptions(config, name);
  // Log lines name the active span only in a process that traces.
  const logger = createLogger({ service: name, level: config.LOG_LEVEL, mixin: traced ? traceLogFields : undefined });
  // Before `build`: its clients (S3, MongoDB) are traced only when tracing is on by then.
  const tracing = startTracing(traced, logger);
  const audit = openAuditLog(name, config.AUDIT_LOG);
  let draining = false;
  const built = await build({ config, logger, audit, isDraining: () => draining });
  // Created now, listening once the API port does.
  const backends = built.backends ?? [];
  const readiness = [...backends.map((b) => b.readiness), ...(built.admin.readiness ?? [])];
  const admin = createServer(adminApp({ metrics: built.admin.metrics, readiness, isDraining: () => draining }));
  await runServer(built.app, {
    ...built.server,
    port: config.PORT,
    host: config.HOST,
    logger,
    shutdownGraceMs: config.SHUTDOWN_GRACE_MS,
    onDraining: () => {
      draining = true;
    },
    onShutdown: async () => {
      if (admin.listening) await closeServer(admin);
      await built.onShutdown?.();
      for (const backend of backends) await backend.close();
      audit.close();
      await tracing.shutdown();
    },
  });
  await listen(admin, config.ADMIN_PORT, config.HOST);
  logger.info(
    { adminPort: (admin.address() as AddressInfo).port },
    'admin port listening (/readyz, /healthz/deps, /metrics)',
  );
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
