import { BODY_SOCKET_HIGH_WATER_MARK, ServiceMetrics, startService, type ReadinessCheck } from '@cp/service-kit';
import { buildApp } from './app';
import { loadConfig } from './config';
import { answerClientErrors, answerIdleTimeout, deferExpectations } from './http/clientErrors';
import { ApiDescription } from './docs/ApiDescription';
import { RouteLabels, type Upstream } from './http/routes';

startService({
  name: 'gateway',
  loadConfig,
  build: async ({ config, logger }) => {
    const upstreams: Partial<Record<Upstream, string>> = { content: config.CONTENT_SERVICE_URL };
    if (config.AUTH_SERVICE_URL) upstreams.auth = config.AUTH_SERVICE_URL;
    if (config.SESSION_SERVICE_URL) upstreams.sessions = config.SESSION_SERVICE_URL;

    // The upstreams' liveness, for /healthz/deps and backend_up (readiness follows the pod, not them).
    const readiness: ReadinessCheck[] = Object.entries(upstreams).map(([name, url]) => ({
      name,
      check: async () => {
        const res = await fetch(new URL('/healthz', url), { signal: AbortSignal.timeout(1500) });
        if (!res.ok) throw new Error(`${name} answered ${res.status}`);
      },
    }));

    // The API's routes are declared once, in its description: the docs serve it, the metrics label by it.
    const description = ApiDescription.fromFile();
    const routes = RouteLabels.fromDescription(description.document);
    const metrics = new ServiceMetrics('gateway', (req) => routes.label(req.path));
    const app = buildApp({
      description,
      logger,
      metrics,
      upstreams,
      upstreamTimeoutMs: config.UPSTREAM_TIMEOUT_MS,
      signInUpstreamTimeoutMs: config.SIGNIN_UPSTREAM_TIMEOUT_MS,
      trustIncomingTrace: config.TRACE_INCOMING_CONTEXT === 'trust',
      cors: {
        origins: config.CORS_ALLOWED_ORIGINS,
        maxAgeSeconds: config.CORS_MAX_AGE_SECONDS,
        allowCredentials: config.CORS_ALLOW_CREDENTIALS,
      },
    });
    return {
      app,
      // The public port is the internet's: readiness details and metrics are on the admin port.
      admin: { metrics, readiness },
      server: {
        requestTimeoutMs: config.CLIENT_IDLE_TIMEOUT_MS,
        socketHighWaterMark: BODY_SOCKET_HIGH_WATER_MARK,
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
