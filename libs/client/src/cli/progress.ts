import { Format, SingleBar } from 'cli-progress';
import { PART_SIZE } from '#protocol';
import type { Progress } from '../options';
import { formatDuration } from '../errors';
import type { RetryNotice } from '../RetryPolicy';

export interface ProgressView {
  update(p: Progress): void;
  /** A request failed in a retriable way and waits before its next attempt. */
  waiting(notice: RetryNotice): void;
  stop(): void;
}

const mib = (n: number) => (n / 2 ** 20).toFixed(1);

/** `waiting 4 s: service unavailable (503), retrying for 1m52s more`, as of `now`. */
export function waitingText(notice: RetryNotice, now = Date.now()): string {
  const wait = Math.max(0, Math.ceil((notice.retryAt - now) / 1000));
  return `waiting ${wait} s: ${notice.reason}, retrying for ${formatDuration(Math.max(0, notice.giveUpAt - now))} more`;
}

/** Lines mode prints a waiting line at most this often for the same reason (parts in flight fail together). */
const WAITING_LINE_EVERY_MS = 5000;

/**
 * A bar with bytes, rate and ETA on a terminal (a byte counter while a stream's length is unknown);
 * a line per 10 % (per 64 MiB for streams) otherwise; nothing with --json. While a request waits to
 * be retried, the bar's ETA gives way to "waiting 4 s: <why>, retrying for 1m52s more" (one line,
 * counting down); without a terminal a line says so, and another when the transfer goes on.
 */
export function progressView(label: string, stream: NodeJS.WriteStream, mode: 'bar' | 'lines' | 'none'): ProgressView {
  const started = Date.now();
  const rate = (done: number) => done / 1e6 / Math.max(0.001, (Date.now() - started) / 1000);
  /** The latest wait, shown until its attempt starts. */
  let wait: RetryNotice | null = null;
  const waitingNow = () => (wait !== null && wait.retryAt > Date.now() ? wait : null);
  if (mode === 'bar') {
    const head = `${label} [{bar}] {percentage}% | {doneMiB}/{totalMiB} MiB | {rate} MB/s | `;
    const bar = new SingleBar({
      stream,
      // Rendered every 100 ms: the countdown of a wait moves by itself.
      format: (options, params, payload) => {
        const w = waitingNow();
        return Format.Formatter(
          { ...options, format: `${head}${w ? waitingText(w) : 'ETA {eta_formatted}'}` },
          params,
          payload,
        );
      },
      hideCursor: true,
      etaBuffer: 20,
      fps: 10,
    });
    let began = false;
    /** A line of our own (a byte counter, or a wait before the bar began) that needs its end. */
    let ownLine = false;
    let lastCounter = 0;
    const counter = (done: number) => {
      const w = waitingNow();
      stream.write(
        `\r${label} ${mib(done)} MiB | ${rate(done).toFixed(1)} MB/s${w ? ` | ${waitingText(w)}` : ''}\x1b[K`,
      );
      ownLine = true;
    };
    let counting = false;
    return {
      update(p) {
        if (p.total === null) {
          counting = true;
          lastCounter = p.done;
          counter(p.done);
          return;
        }
        const payload = { doneMiB: mib(p.done), totalMiB: mib(p.total), rate: rate(p.done).toFixed(1) };
        if (!began) {
          if (ownLine) stream.write('\n');
          ownLine = false;
          bar.start(Math.max(1, p.total), p.done, payload);
          began = true;
        } else bar.update(p.done, payload);
      },
      waiting(notice) {
        wait = notice;
        if (began) return;
        if (counting) counter(lastCounter);
        else {
          stream.write(`\r${label}: ${waitingText(notice)}\x1b[K`);
          ownLine = true;
        }
      },
      stop() {
        if (began) bar.stop();
        else if (ownLine) stream.write('\n');
        began = false;
        ownLine = false;
        counting = false;
        wait = null;
      },
    };
  }
  if (mode === 'lines') {
    let lastStep = -1;
    let lastWaitLine: { at: number; reason: string } | null = null;
    let waitedSince: number | null = null;
    return {
      update(p) {
        if (waitedSince !== null && waitingNow() === null) {
          stream.write(`${label}: going on after ${formatDuration(Date.now() - waitedSince)} of retries\n`);
          waitedSince = null;
          lastWaitLine = null;
        }
        const step =
          p.total === null ? Math.floor(p.done / PART_SIZE) : p.total === 0 ? 10 : Math.floor((p.done / p.total) * 10);
        if (step === lastStep) return;
        lastStep = step;
        const share = p.total === null ? '' : `${p.total === 0 ? 100 : step * 10}% `;
        stream.write(`${label}: ${share}${p.done}/${p.total ?? '?'} bytes ${rate(p.done).toFixed(1)} MB/s\n`);
      },
      waiting(notice) {
        wait = notice;
        const now = Date.now();
        waitedSince ??= now;
        if (lastWaitLine && lastWaitLine.reason === notice.reason && now - lastWaitLine.at < WAITING_LINE_EVERY_MS)
          return;
        lastWaitLine = { at: now, reason: notice.reason };
        stream.write(`${label}: ${waitingText(notice, now)}\n`);
      },
      stop() {},
    };
  }
  return { update() {}, waiting() {}, stop() {} };
}
