import { Router } from 'express';
import type { ServiceMetrics } from './ServiceMetrics';

/** A dependency check for /readyz: resolves when the dependency answers, rejects otherwise. */
export interface ReadinessCheck {
  name: string;
  check: () => Promise<void>;
}

/**
 * /healthz: the process is alive. /readyz: every dependency answers and the service is not
 * shutting down. /metrics: Prometheus text.
 */
export function healthRoutes(opts: { checks: ReadinessCheck[]; metrics: ServiceMetrics; isDraining: () => boolean; healthOnly?: boolean }): Router {
  const router = Router();
  if (opts.healthOnly) {
    router.get('/healthz', (_req, res) => {
      res.json({ status: 'ok' });
    });
    return router;
  }
  router.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  router.get('/readyz', async (_req, res) => {
    if (opts.isDraining()) {
      res.status(503).json({ status: 'draining' });
      return;
    }
    const results = await Promise.all(
      opts.checks.map(async ({ name, check }) => {
        try {
          await withTimeout(check(), 2000);
          return [name, 'ok'] as const;
        } catch {
          return [name, 'unavailable'] as const;
        }
      }),
    );
    const ok = results.every(([, r]) => r === 'ok');
    res.status(ok ? 200 : 503).json({ status: ok ? 'ready' : 'not ready', checks: Object.fromEntries(results) });
  });
  router.get('/metrics', opts.metrics.handler());
  return router;
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error('timeout')), ms);
    p.then(
      (v) => {
        clearTimeout(t);
        resolve(v);
      },
      (e: unknown) => {
        clearTimeout(t);
        reject(e);
      },
    );
  });
}
