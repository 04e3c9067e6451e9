// One process of the soak (a backing server or a service) as a kubelet would run it: started
// with a fixed command, environment and ports, killed (SIGKILL) or paused (SIGSTOP) on purpose,
// started again with the same command, and restarted when it exits by itself (which is recorded).
const { spawn } = require('node:child_process');
const fs = require('node:fs');

class SupervisedProcess {
  /**
   * @param {object} o
   * @param {string} o.name
   * @param {string} o.command
   * @param {string[]} o.args
   * @param {NodeJS.ProcessEnv} o.env
   * @param {string} o.logFile appended to by every run
   * @param {(e: object) => void} o.onUnexpectedExit
   */
  constructor({ name, command, args, env, logFile, onUnexpectedExit }) {
    Object.assign(this, { name, command, args, env, logFile, onUnexpectedExit });
    this.child = null;
    this.expectingExit = false;
    this.stopped = false;
    this.restartTimer = null;
    this.starts = 0;
  }

  get pid() {
    return this.child?.pid;
  }

  get running() {
    return !!this.child && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Spawns it (does not wait until it serves). */
  start() {
    if (this.stopped) return;
    const out = fs.openSync(this.logFile, 'a');
    this.starts++;
    fs.writeSync(out, `--- soak: start #${this.starts} of ${this.name} at ${new Date().toISOString()}\n`);
    const child = spawn(this.command, this.args, { env: this.env, stdio: ['ignore', out, out] });
    fs.closeSync(out);
    this.child = child;
    this.expectingExit = false;
    child.exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    child.exited.then(({ code, signal }) => {
      if (this.expectingExit || this.stopped || this.child !== child) return;
      // Exited by itself: record it and start it again a second later, as a kubelet would.
      this.onUnexpectedExit({ name: this.name, pid: child.pid, code, signal });
      this.restartTimer = setTimeout(() => this.start(), 1000);
    });
    child.on('error', () => {});
  }

  /** Adopts a process started elsewhere with this command (tools/devstack's first start). */
  adopt(child) {
    this.starts++;
    this.child = child;
    child.exited ??= new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    child.exited.then(({ code, signal }) => {
      if (this.expectingExit || this.stopped || this.child !== child) return;
      this.onUnexpectedExit({ name: this.name, pid: child.pid, code, signal });
      this.restartTimer = setTimeout(() => this.start(), 1000);
    });
  }

  /** SIGKILL and wait for the exit (at most 10 s). */
  async kill() {
    const child = this.child;
    if (!child || !this.running) return;
    this.expectingExit = true;
    child.kill('SIGCONT');
    child.kill('SIGKILL');
    await Promise.race([child.exited, new Promise((r) => setTimeout(r, 10_000))]);
  }

  /** SIGSTOP; resolves once every thread is stopped (at most 2 s). */
  async pause() {
    const pid = this.child?.pid;
    if (!pid || !this.running) return;
    this.child.kill('SIGSTOP');
    const deadline = Date.now() + 2000;
    while (Date.now() < deadline) {
      try {
        const states = fs
          .readdirSync(`/proc/${pid}/task`)
          .map((t) => /State:\s+(\S)/.exec(fs.readFileSync(`/proc/${pid}/task/${t}/status`, 'utf8'))?.[1]);
        if (states.every((s) => s === 'T' || s === 't')) return;
      } catch {
        return;
      }
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  resume() {
    if (this.running) this.child.kill('SIGCONT');
  }

  /** For good: SIGTERM (SIGKILL after `graceMs`), no restart. */
  async stop(graceMs = 5000) {
    this.stopped = true;
    clearTimeout(this.restartTimer);
    const child = this.child;
    if (!child || !this.running) return;
    this.expectingExit = true;
    child.kill('SIGCONT');
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    await Promise.race([child.exited, new Promise((r) => setTimeout(r, graceMs + 3000))]);
    clearTimeout(timer);
  }

  /** Synchronous last resort on the way out. */
  killNow() {
    this.stopped = true;
    clearTimeout(this.restartTimer);
    if (this.running) {
      try {
        this.child.kill('SIGCONT');
        this.child.kill('SIGKILL');
      } catch {
        /* gone */
      }
    }
  }
}

module.exports = { SupervisedProcess };
