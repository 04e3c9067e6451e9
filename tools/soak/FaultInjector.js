// The faults of the soak, one every 8–15 s in an order drawn from the seed (each kind once per
// round of all ten, so that short runs see every kind): kill -9 of each service and of each
// backing server (started again 1–3 s later with the same command), and SIGSTOP of each backing
// server for 3–6 s. After each fault, a probe (a download, the status of an unfinished upload and a
// sign-in) runs until it succeeds: the recovery time. The next fault waits for it.
const { errorIdOf } = require('./SoakHttp');
const { signInOnce } = require('./SignIns');

const KINDS = [
  ['kill', 'gateway'],
  ['kill', 'content-service'],
  ['kill', 'auth-service'],
  ['kill', 'session-service'],
  ['pause', 's3'],
  ['pause', 'mongodb'],
  ['pause', 'redis'],
  ['kill', 's3'],
  ['kill', 'mongodb'],
  ['kill', 'redis'],
];
const RECOVERY_LIMIT_S = 30;
const PROBE_GIVE_UP_S = 90;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

class FaultInjector {
  /**
   * @param {object} o
   * @param {object} o.ctx the soak's context (http, now, probe, journal)
   * @param {import('./SoakSystem').SoakSystem} o.system
   */
  constructor({ ctx, system }) {
    this.ctx = ctx;
    this.system = system;
    this.prng = ctx.prng.fork('faults');
    /** { kind, target, action, start, end, recoveredAt, recovery, probeFailures } (seconds since the start) */
    this.faults = [];
    this.deck = [];
    this.current = null;
  }

  nextKind() {
    if (!this.deck.length) this.deck = this.prng.shuffle(KINDS);
    return this.deck.shift();
  }

  /** Injects faults until `until()` says stop (between faults only). */
  async run(shouldGoOn) {
    const { ctx } = this;
    let nextAt = ctx.now() + this.prng.float(8, 15);
    while (shouldGoOn()) {
      if (ctx.now() < nextAt) {
        await sleep(Math.min(250, (nextAt - ctx.now()) * 1000));
        continue;
      }
      const [action, target] = this.nextKind();
      const hold = action === 'pause' ? this.prng.float(3, 6) : this.prng.float(1, 3);
      const gap = this.prng.float(8, 15);
      const fault = await this.inject(action, target, hold);
      nextAt = Math.max(fault.start + gap, (fault.recoveredAt ?? ctx.now()) + 2);
    }
  }

  async inject(action, target, holdS) {
    const { ctx } = this;
    const proc = this.system.processes[target];
    const fault = { kind: `${action} ${target}`, action, target, start: ctx.now(), hold: holdS };
    this.current = fault;
    this.faults.push(fault);
    if (action === 'kill') {
      const pid = proc.pid;
      await proc.kill();
      fault.pid = pid;
      await sleep(holdS * 1000);
      proc.start();
    } else {
      await proc.pause();
      await sleep(holdS * 1000);
      proc.resume();
    }
    fault.end = ctx.now();
    ctx.journal({ kind: 'fault', fault: fault.kind, start: fault.start, end: fault.end, pid: fault.pid });
    await this.measureRecovery(fault);
    this.current = null;
    return fault;
  }

  async measureRecovery(fault) {
    const { ctx } = this;
    fault.probeFailures = [];
    while (ctx.now() - fault.end < PROBE_GIVE_UP_S) {
      const failures = await this.probe();
      if (!failures.length) {
        fault.recoveredAt = ctx.now();
        fault.recovery = fault.recoveredAt - fault.end;
        ctx.journal({ kind: 'recovered', fault: fault.kind, after: fault.recovery });
        return;
      }
      if (fault.probeFailures.length < 20) fault.probeFailures.push({ at: ctx.now(), failures });
      await sleep(250);
    }
    fault.recovery = null;
    ctx.journal({ kind: 'notRecovered', fault: fault.kind, probeFailures: fault.probeFailures });
  }

  /** One round of the probe; the failures (empty: everything answered as it should). */
  async probe() {
    const { ctx } = this;
    const p = ctx.probe;
    const auth = { authorization: `Bearer ${p.token}` };
    const idleMs = 3000;
    const base = `${ctx.gatewayUrl}/v1/${p.owner}/contents`;
    const [get, head, signIn] = await Promise.all([
      ctx.http.once({
        method: 'GET',
        url: `${base}/${p.ready.id}`,
        headers: auth,
        hash: true,
        idleMs,
        worker: 'probe',
      }),
      ctx.http.once({ method: 'HEAD', url: `${base}/${p.unfinishedId}`, headers: auth, idleMs, worker: 'probe' }),
      signInOnce(ctx, p.user, p.apiKey, { worker: 'probe', idleMs, retry: false }).catch((error) => ({
        r: { error },
        step: 'sign-in',
      })),
    ]);
    const failures = [];
    const describe = (r) => (r.error ? r.error.message : `${r.status} ${errorIdOf(r) ?? ''}`.trim());
    if (get.status !== 200 || get.sha256 !== p.ready.sha256) failures.push(`GET ready: ${describe(get)}`);
    if (head.status !== 200 || head.headers['x-upload-state'] !== 'uploading')
      failures.push(`HEAD unfinished: ${describe(head)}`);
    if (!signIn.pair) failures.push(`sign-in ${signIn.step}: ${describe(signIn.r)}`);
    return failures;
  }

  /** Whether [from, to] meets a fault's window: its start to its end plus its recovery. */
  inWindow(from, to) {
    return this.faults.some((f) => {
      const windowEnd = f.recoveredAt ?? (f.end ?? Infinity) + PROBE_GIVE_UP_S;
      return from <= windowEnd && to >= f.start;
    });
  }
}

module.exports = { FaultInjector, KINDS, RECOVERY_LIMIT_S };
