// The system under the soak: an S3 server, FerretDB and Redis of its own (the binaries
// deploy/local/backing-servers.sh installs, with its flags) on fixed ports beside nobody else's,
// and the four services started by tools/devstack/stack.js on fixed ports too, so that each one
// can be killed and started again on the same address with the same command and environment.
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const { SupervisedProcess } = require('./SupervisedProcess');

const TOOLS = process.env.CP_TOOLS_DIR || path.join(os.homedir(), '.cache', 'content-platform', 'bin');
const S3_ACCESS_KEY = 'soak';
const S3_SECRET_KEY = 'soak-secret-key';
const SERVICES = ['gateway', 'content-service', 'auth-service', 'session-service'];

function portOpen(port) {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.setTimeout(1000);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('timeout', () => {
      socket.destroy();
      resolve(true); // something holds it, if only a paused process
    });
    socket.once('error', () => resolve(false));
  });
}

function portsFrom(base) {
  return {
    s3: base,
    mongodb: base + 1,
    redis: base + 2,
    gateway: base + 3,
    gatewayAdmin: base + 4,
    content: base + 5,
    contentAdmin: base + 6,
    auth: base + 7,
    authAdmin: base + 8,
    session: base + 9,
    sessionAdmin: base + 10,
  };
}

/** The backing servers' commands: the flags of deploy/local/backing-servers.sh, Redis with an append-only file. */
function backingCommands(ports, dataDir) {
  const dir = (name) => {
    const d = path.join(dataDir, name);
    fs.mkdirSync(d, { recursive: true });
    return d;
  };
  return {
    s3: {
      command: path.join(TOOLS, 'versitygw'),
      args: ['--port', `127.0.0.1:${ports.s3}`, '--quiet', '--keep-alive', 'posix', dir('s3')],
      env: { ...process.env, ROOT_ACCESS_KEY: S3_ACCESS_KEY, ROOT_SECRET_KEY: S3_SECRET_KEY },
    },
    mongodb: {
      command: path.join(TOOLS, 'ferretdb'),
      args: [
        '--handler=sqlite',
        `--sqlite-url=file:${dir('ferretdb')}/?_pragma=synchronous(normal)`,
        `--listen-addr=127.0.0.1:${ports.mongodb}`,
        '--state-dir=-',
        '--debug-addr=-',
        '--telemetry=disable',
        '--log-level=warn',
      ],
      env: process.env,
    },
    // appendfsync always: a reply leaves Redis only once its write is in the file. With everysec a
    // write waits behind a slow background fsync (up to 2 s) while replies go out, and a kill -9
    // then loses what was acknowledged; the soak kills Redis on purpose and counts such losses.
    redis: {
      command: 'redis-server',
      args: [
        '--bind',
        '127.0.0.1',
        '--port',
        String(ports.redis),
        '--save',
        '',
        '--appendonly',
        'yes',
        '--appendfsync',
        'always',
        '--dir',
        dir('redis'),
      ],
      env: process.env,
    },
  };
}

async function waitFor(what, check, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${what} was not ready within ${timeoutMs / 1000} s`);
}

class SoakSystem {
  /**
   * @param {object} o
   * @param {number} o.portBase eleven ports from here: S3, MongoDB, Redis, then each service's API and admin port
   * @param {string} o.stateDir data of the backing servers and the keys (removed at the end)
   * @param {string} o.logDir every process's log
   * @param {(e: object) => void} o.onUnexpectedExit
   */
  constructor({ portBase, stateDir, logDir, onUnexpectedExit }) {
    this.ports = portsFrom(portBase);
    this.stateDir = stateDir;
    this.logDir = logDir;
    this.onUnexpectedExit = onUnexpectedExit;
    /** name → SupervisedProcess: s3, mongodb, redis and the four services. */
    this.processes = {};
    this.stack = null;
  }

  async start({ contentEnv, logLevel }) {
    const taken = [];
    for (const [name, port] of Object.entries(this.ports)) if (await portOpen(port)) taken.push(`${name} ${port}`);
    if (taken.length)
      throw new Error(`ports already in use: ${taken.join(', ')} (another soak running? choose --port-base)`);
    for (const bin of ['versitygw', 'ferretdb'])
      if (!fs.existsSync(path.join(TOOLS, bin)))
        throw new Error(`${path.join(TOOLS, bin)} is missing: run "bash deploy/local/backing-servers.sh install"`);
    const commands = backingCommands(this.ports, path.join(this.stateDir, 'data'));
    for (const [name, spec] of Object.entries(commands)) {
      this.processes[name] = new SupervisedProcess({
        name,
        ...spec,
        logFile: path.join(this.logDir, `${name}.log`),
        onUnexpectedExit: this.onUnexpectedExit,
      });
      this.processes[name].start();
    }
    for (const name of Object.keys(commands)) await waitFor(name, () => portOpen(this.ports[name]), 30_000);

    const backing = this.backingEnv();
    // tools/devstack/stack.js reads the backing servers from the environment.
    Object.assign(process.env, backing);
    const { startStack } = require('../devstack/stack');
    const p = this.ports;
    this.stack = await startStack({
      prefix: 'soak',
      logDir: this.logDir,
      keysDir: path.join(this.stateDir, 'keys'),
      ports: {
        gateway: p.gateway,
        gatewayAdmin: p.gatewayAdmin,
        content: p.content,
        contentAdmin: p.contentAdmin,
        auth: p.auth,
        authAdmin: p.authAdmin,
        session: p.session,
        sessionAdmin: p.sessionAdmin,
      },
      env: { LOG_LEVEL: logLevel },
      contentEnv,
    });
    for (const s of this.stack.services) {
      const proc = new SupervisedProcess({
        name: s.name,
        command: s.command,
        args: s.args,
        env: s.env,
        logFile: s.logFile,
        onUnexpectedExit: this.onUnexpectedExit,
      });
      proc.adopt(s.child);
      this.processes[s.name] = proc;
    }
  }

  backingEnv() {
    return {
      S3_ENDPOINT: `http://127.0.0.1:${this.ports.s3}`,
      S3_ACCESS_KEY_ID: S3_ACCESS_KEY,
      S3_SECRET_ACCESS_KEY: S3_SECRET_KEY,
      MONGODB_URL: `mongodb://127.0.0.1:${this.ports.mongodb}/`,
      REDIS_URL: `redis://127.0.0.1:${this.ports.redis}`,
    };
  }

  get gatewayUrl() {
    return `http://127.0.0.1:${this.ports.gateway}`;
  }

  /** Services first (they flush on SIGTERM), then the backing servers. */
  async stop() {
    await Promise.all(SERVICES.map((n) => this.processes[n]?.stop(5000)));
    await Promise.all(['s3', 'mongodb', 'redis'].map((n) => this.processes[n]?.stop(5000)));
  }

  killNow() {
    for (const p of Object.values(this.processes)) p.killNow();
    for (const s of this.stack?.services ?? []) {
      try {
        s.child.kill('SIGKILL');
      } catch {
        /* gone */
      }
    }
  }
}

module.exports = { SoakSystem, SERVICES };
