import { createServer } from 'node:http';
import { adminApp, ServiceMetrics, startService, type ReadinessCheck } from '@cp/service-kit';
import { buildApp } from './app';
import { loadConfig } from './config';
import { answerClientErrors, answerIdleTimeout, deferExpectations } from './http/clientErrors';
import { routeLabel, type Upstream } from './http/routes';

startService({
  name: 'gateway',
  loadConfig,
  build: async ({ config, logger, isDraining }) => {
    const upstreams: Partial<Record<Upstream, string>> = { content: config.CONTENT_SERVICE_URL };
    if (config.AUTH_SERVICE_URL) upstreams.auth = config.AUTH_SERVICE_URL;
    if (config.SESSION_SERVICE_URL) upstreams.sessions = config.SESSION_SERVICE_URL;

    // Ready when every upstream says it is alive; an upstream's own dependencies are its readiness.
    const readiness: ReadinessCheck[] = Object.entries(upstreams).map(([name, url]) => ({
      name,
      check: async () => {
        const res = await fetch(new URL('/healthz', url), { signal: AbortSignal.timeout(1500) });
        if (!res.ok) throw new Error(`${name} answered ${res.status}`);
      },
    }));

    const metrics = new ServiceMetrics('gateway', (req) => routeLabel(req.path));
    // The public port is the internet's: readiness details and metrics go on a port of their own.
    const admin = createServer(adminApp({ metrics, readiness, isDraining }));
    await new Promise<void>((resolve, reject) => {
      admin.once('error', reject);
      admin.listen(config.ADMIN_PORT, config.HOST, () => resolve());
    });
    logger.info({ adminPort: config.ADMIN_PORT }, 'admin port listening');
    const app = buildApp({
      logger,
      metrics,
      upstreams,
      upstreamTimeoutMs: config.UPSTREAM_TIMEOUT_MS,
      readiness,
      isDraining,
    });
    const onShutdown = async () => {
      admin.closeAllConnections();
      await new Promise<void>((resolve) => admin.close(() => resolve()));
    };
    return {
      app,
      onShutdown,
      server: {
        requestTimeoutMs: config.CLIENT_IDLE_TIMEOUT_MS,
        maxHeaderSize: config.MAX_HEADER_BYTES,
        // A missing Host, an Expect and what the parser refuses are answered in the contract's format.
        requireHostHeader: false,
        onIdleTimeout: answerIdleTimeout,
        configure: (server) => {
          answerClientErrors(server, logger);
          deferExpectations(server);
        },
      },
    };
  },
});
