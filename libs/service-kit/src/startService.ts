import type { RequestListener } from 'node:http';
import { ConfigError } from '@cp/config';
import { createLogger, type Logger } from '@cp/logging';
import { runServer, type RunServerOptions } from './runServer';

/** The settings every service reads (see `serviceSettings` in @cp/config). */
export interface BaseServiceConfig {
  PORT: number;
  HOST: string;
  LOG_LEVEL: string;
  SHUTDOWN_GRACE_MS: number;
}

/** What `build` gets: the parsed config, the service's logger, and whether shutdown has begun (for /readyz). */
export interface ServiceContext<C> {
  config: C;
  logger: Logger;
  isDraining: () => boolean;
}

/** What a service's `build` hands back: its app, how to close its pools, and server options of its own. */
export interface BuiltService {
  app: RequestListener;
  /** Called once the server has stopped taking requests. */
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
 * The start-up every service shares: config, logger, its dependencies, then `runServer` with
 * draining and shutdown hooks. A failure before listening (a ConfigError by its message alone,
 * anything else with its stack) is printed and the process exits 1.
 */
export function startService<C extends BaseServiceConfig>(options: StartServiceOptions<C>): void {
  start(options).catch((error: unknown) => {
    process.stderr.write(`${options.name}: ${error instanceof ConfigError ? error.message : String((error as Error)?.stack ?? error)}\n`);
    process.exit(1);
  });
}

async function start<C extends BaseServiceConfig>({ name, loadConfig, build }: StartServiceOptions<C>): Promise<void> {
  const config = loadConfig();
  const logger = createLogger({ service: name, level: config.LOG_LEVEL });
  let draining = false;
  const built = await build({ config, logger, isDraining: () => draining });
  await runServer(built.app, {
    ...built.server,
    port: config.PORT,
    host: config.HOST,
    logger,
    shutdownGraceMs: config.SHUTDOWN_GRACE_MS,
    onDraining: () => {
      draining = true;
    },
    onShutdown: built.onShutdown,
  });
}
