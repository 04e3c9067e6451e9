import type { Request, RequestHandler } from 'express';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { whenDone } from './whenDone';

const TIMED = 'cpServiceMetricsTimed';
const KNOWN_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS']);

/** Prometheus metrics of one service: process defaults plus HTTP request counts and durations. */
export class ServiceMetrics {
  readonly registry = new Registry();
  private readonly duration: Histogram<'method' | 'route' | 'status'>;
  readonly bytes: Counter<'direction'>;
  private readonly backends: Gauge<'backend'>;

  /**
   * `routeLabel` names a request's route for the labels; without it, the matched express route or
   * the first path segment. A service that sees arbitrary paths (the gateway) must give a bounded one.
   */
  constructor(
    service: string,
    private readonly routeLabel?: (req: Request) => string,
  ) {
    this.registry.setDefaultLabels({ service });
    collectDefaultMetrics({ register: this.registry });
    this.duration = new Histogram({
      name: 'http_request_duration_seconds',
      help: 'HTTP request duration by route and status',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.001, 0.005, 0.02, 0.1, 0.5, 2, 10, 60, 300],
      registers: [this.registry],
    });
    this.bytes = new Counter({
      name: 'content_bytes_total',
      help: 'Content bytes moved, by direction',
      labelNames: ['direction'],
      registers: [this.registry],
    });
    this.backends = new Gauge({
      name: 'backend_up',
      help: 'Whether a backend answered its last check (1) or not (0); checked at each scrape',
      labelNames: ['backend'],
      registers: [this.registry],
    });
  }

  /** Records a backend's last check (see healthRoutes). */
  backendUp(backend: string, up: boolean): void {
    this.backends.set({ backend }, up ? 1 : 0);
  }

  /** A request's route label (see the constructor): bounded, also a span's name. */
  routeOf(req: Request): string {
    return this.routeLabel
      ? this.routeLabel(req)
      : `${req.baseUrl}${(req.route?.path as string | undefined) ?? `/${req.path.split('/')[1] ?? ''}`}`;
  }

  /** Times each request, labelled by route (see the constructor). */
  middleware(): RequestHandler {
    return (req, res, next) => {
      // Mounted twice by a service that times requests before its own checks: time each once.
      if (res.locals[TIMED]) return next();
      res.locals[TIMED] = true;
      const end = this.duration.startTimer();
      whenDone(res, () => {
        end({
          method: KNOWN_METHODS.has(req.method) ? req.method : 'other',
          route: this.routeOf(req),
          status: String(res.statusCode),
        });
      });
      next();
    };
  }

  handler(): RequestHandler {
    return async (_req, res) => {
      res.setHeader('Content-Type', this.registry.contentType);
      res.end(await this.registry.metrics());
    };
  }
}
