import { Gauge, type Registry } from 'prom-client';

/**
 * Whether the sweeper runs, for the alert SweeperNotRunning (k8s/monitoring/rules.yaml): when this
 * replica last finished a whole pass, and how often it is meant to. Only the replica that holds
 * the sweep lease sweeps, so the freshest replica's value is the system's.
 */
export class SweeperMetrics {
  private readonly lastSuccess: Gauge;

  constructor(registry: Registry, intervalSeconds: number) {
    const registers = [registry];
    this.lastSuccess = new Gauge({
      name: 'content_sweeper_last_success_timestamp_seconds',
      help: 'When this replica last finished a sweep holding the sweep lease, with no upload left failing (Unix time); when its sweeper started, until then',
      registers,
    });
    new Gauge({
      name: 'content_sweeper_interval_seconds',
      help: 'How often each replica tries to sweep (SWEEP_INTERVAL_SECONDS)',
      registers,
    }).set(intervalSeconds);
  }

  /** The sweeper started (no pass is overdue yet), or finished a pass with no failure. */
  succeeded(at: Date): void {
    this.lastSuccess.set(at.getTime() / 1000);
  }
}
