import { SingleBar } from 'cli-progress';
import type { Progress } from '../ContentClient';

export interface ProgressView {
  update(p: Progress): void;
  stop(): void;
}

/** A bar with bytes, rate and ETA on a terminal; a line per 10% otherwise; nothing with --json. */
export function progressView(label: string, stream: NodeJS.WriteStream, mode: 'bar' | 'lines' | 'none'): ProgressView {
  const started = Date.now();
  const rate = (done: number) => done / 1e6 / Math.max(0.001, (Date.now() - started) / 1000);
  if (mode === 'bar') {
    const bar = new SingleBar(
      {
        stream,
        format: `${label} [{bar}] {percentage}% | {doneMiB}/{totalMiB} MiB | {rate} MB/s | ETA {eta_formatted}`,
        hideCursor: true,
        etaBuffer: 20,
        fps: 10,
      },
    );
    let began = false;
    return {
      update(p) {
        const payload = { doneMiB: (p.done / 2 ** 20).toFixed(1), totalMiB: (p.total / 2 ** 20).toFixed(1), rate: rate(p.done).toFixed(1) };
        if (!began) {
          bar.start(Math.max(1, p.total), p.done, payload);
          began = true;
        } else bar.update(p.done, payload);
      },
      stop() {
        if (began) bar.stop();
      },
    };
  }
  if (mode === 'lines') {
    let lastTenth = -1;
    return {
      update(p) {
        const tenth = p.total === 0 ? 10 : Math.floor((p.done / p.total) * 10);
        if (tenth === lastTenth) return;
        lastTenth = tenth;
        stream.write(`${label}: ${tenth * 10}% ${p.done}/${p.total} bytes ${rate(p.done).toFixed(1)} MB/s\n`);
      },
      stop() {},
    };
  }
  return { update() {}, stop() {} };
}
