import type { RequestHandler, Response } from 'express';
import { performance } from 'node:perf_hooks';
import { inSpan } from '@cp/tracing';

/** The stages a write's time is spent in, as named in its Server-Timing header. */
export type Stage = 'auth' | 'record' | 'lock' | 'commit' | 'stage' | 'part' | 'assembly' | 'complete';

/**
 * Where one request's time went, by stage, answered as a Server-Timing header (RFC 8673's
 * `name;dur=ms`), so that a client or a benchmark sees the share of each without a profiler.
 * Stages may overlap (a commit batched with other requests' changes counts for each of them).
 */
export class StageTimings {
  private readonly startedAt = performance.now();
  private readonly spent = new Map<Stage, number>();

  add(stage: Stage, ms: number): void {
    this.spent.set(stage, (this.spent.get(stage) ?? 0) + ms);
  }

  /** Runs `work`, counting its time (failed or not) to `stage`; when tracing, as a span `upload <stage>`. */
  async time<T>(stage: Stage, work: () => Promise<T>): Promise<T> {
    const t = performance.now();
    try {
      return await inSpan(`upload ${stage}`, undefined, work);
    } finally {
      this.add(stage, performance.now() - t);
    }
  }

  /** The Server-Timing value: each stage spent in, then `total` (since the request reached the service). */
  header(): string {
    const parts = [...this.spent].map(([stage, ms]) => `${stage};dur=${ms.toFixed(2)}`);
    parts.push(`total;dur=${(performance.now() - this.startedAt).toFixed(2)}`);
    return parts.join(', ');
  }
}

/** Starts a request's timings (first on the /v1 routes, so that `total` covers authentication too). */
export const startTimings: RequestHandler = (_req, res, next) => {
  res.locals.timings = new StageTimings();
  next();
};

/** The request's timings (a detached set when none were started, e.g. in tests of a router alone). */
export function timingsOf(res: Response): StageTimings {
  const timings: unknown = res.locals.timings;
  return timings instanceof StageTimings ? timings : (res.locals.timings = new StageTimings());
}
