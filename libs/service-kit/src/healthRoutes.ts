import { Router } from 'express';
import type { ServiceMetrics } from './ServiceMetrics';

/** A dependency check for /healthz/deps: resolves when the dependency answers, rejects otherwise. */
export interface ReadinessCheck {
  name: string;
  check: () => Promise<void>;
}

/**
 * /healthz: the process is alive (never asks a backend). /readyz: this process can take requests,
 * i.e. it is not shutting down. A backend that is down (S3, MongoDB, Redis, another service) does
 * not make a pod unready: every pod shares that backend, so taking them all out of the Service
 * would only swap the API's own 503 with Retry-After for the ingress's page. The backends'
 * state is a diagnostic for operators: /healthz/deps (also /readyz?verbose) answers each check,
 * 503 when one fails. /metrics: Prometheus text, with `backend_up{backend}` from the last check.
 * All of them are for the admin port; the API port serves `livenessRoute` alone.
 */
export function healthRoutes(opts: {
  checks: ReadinessCheck[];
  metrics: ServiceMetrics;
  isDraining: () => boolean;
}): Router {
  const router = livenessRoute();
  const deps = async (): Promise<{ ok: boolean; checks: Record<string, string> }> => {
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
    for (const [name, r] of results) opts.metrics.backendUp(name, r === 'ok');
    return { ok: results.every(([, r]) => r === 'ok'), checks: Object.fromEntries(results) };
  };
  router.get('/healthz/deps', async (_req, res) => {
    const { ok, checks } = await deps();
    res.status(ok ? 200 : 503).json({ status: ok ? 'ok' : 'degraded', checks });
  });
  router.get('/readyz', async (req, res) => {
    const draining = opts.isDraining();
    const status = draining ? 'draining' : 'ready';
    if (req.query.verbose === undefined) {
      res.status(draining ? 503 : 200).json({ status });
      return;
    }
    const { checks } = await deps();
    res.status(draining ? 503 : 200).json({ status, checks });
  });
  router.get('/metrics', async (req, res, next) => {
    // The backends' state is refreshed at each scrape, so a dashboard sees an outage without /healthz/deps.
    await deps();
    opts.metrics.handler()(req, res, next);
  });
  return router;
}

/** /healthz alone: the liveness answer of a service's API port (where kubelet's liveness probe goes). */
export function livenessRoute(): Router {
  const router = Router();
  router.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
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
