import { SingleBar } from 'cli-progress';
import type { Progress } from '../ContentClient';

export interface ProgressView {
  update(p: Progress): void;
  stop(): void;
}

const mib = (n: number) => (n / 2 ** 20).toFixed(1);

/**
 * A bar with bytes, rate and ETA on a terminal (a byte counter while a stream's length is unknown);
 * a line per 10 % (per 64 MiB for streams) otherwise; nothing with --json.
 */
export function progressView(label: string, stream: NodeJS.WriteStream, mode: 'bar' | 'lines' | 'none'): ProgressView {
  const started = Date.now();
  const rate = (done: number) => done / 1e6 / Math.max(0.001, (Date.now() - started) / 1000);
  if (mode === 'bar') {
    const bar = new SingleBar({
      stream,
      format: `${label} [{bar}] {percentage}% | {doneMiB}/{totalMiB} MiB | {rate} MB/s | ETA {eta_formatted}`,
      hideCursor: true,
      etaBuffer: 20,
      fps: 10,
    });
    let began = false;
    let counter = false;
    return {
      update(p) {
        if (p.total === null) {
          counter = true;
          stream.write(`\r${label} ${mib(p.done)} MiB | ${rate(p.done).toFixed(1)} MB/s `);
          return;
        }
        const payload = { doneMiB: mib(p.done), totalMiB: mib(p.total), rate: rate(p.done).toFixed(1) };
        if (!began) {
          if (counter) stream.write('\n');
          bar.start(Math.max(1, p.total), p.done, payload);
          began = true;
        } else bar.update(p.done, payload);
      },
      stop() {
        if (began) bar.stop();
        else if (counter) stream.write('\n');
        began = false;
        counter = false;
      },
    };
  }
  if (mode === 'lines') {
    let lastStep = -1;
    return {
      update(p) {
        const step = p.total === null ? Math.floor(p.done / 2 ** 26) : p.total === 0 ? 10 : Math.floor((p.done / p.total) * 10);
        if (step === lastStep) return;
        lastStep = step;
        const share = p.total === null ? '' : `${p.total === 0 ? 100 : step * 10}% `;
        stream.write(`${label}: ${share}${p.done}/${p.total ?? '?'} bytes ${rate(p.done).toFixed(1)} MB/s\n`);
      },
      stop() {},
    };
  }
  return { update() {}, stop() {} };
}
