#!/usr/bin/env node
// Starts the services of the system as child processes against the local backing servers.
// A small library of the development stack: `scripts/start.sh` runs it (foreground, until Ctrl-C);
// the tests' global setup, the end-to-end tests and the benchmarks start services with it.
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');

/** The V8 flags every service runs with: the same young-generation size as the images (deploy/Dockerfile says why). */
const SERVICE_NODE_ARGS = ['--max-semi-space-size=8'];

const ROOT = path.join(__dirname, '..', '..');
const DEV_ISSUER = 'content-platform-dev';

/** Backing-server settings, as deploy/local/backing-servers.sh starts them. */
function backingEnv() {
  return {
    S3_ENDPOINT: process.env.S3_ENDPOINT || `http://127.0.0.1:${process.env.CP_S3_PORT || 9000}`,
    S3_ACCESS_KEY_ID: process.env.S3_ACCESS_KEY_ID || process.env.CP_S3_ACCESS_KEY || 'localdev',
    S3_SECRET_ACCESS_KEY: process.env.S3_SECRET_ACCESS_KEY || process.env.CP_S3_SECRET_KEY || 'localdev-secret',
    MONGODB_URL: process.env.MONGODB_URL || `mongodb://127.0.0.1:${process.env.CP_MONGO_PORT || 27017}/`,
    REDIS_URL: process.env.REDIS_URL || `redis://127.0.0.1:${process.env.CP_REDIS_PORT || 6379}`,
  };
}

// Ports this process has handed out. The kernel may give a port just closed to the next
// listen(0), so two calls in a row could name the same port (a service's API and admin ports did
// once): a port handed out before is never handed out again by this process.
const handedOut = new Set();

function listenOnce() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => resolve(srv));
  });
}

/** A port that was free a moment ago and that this process has not handed out before. */
async function freePort() {
  const held = [];
  try {
    // Each try holds its listener open, so the kernel cannot give the same port twice in the loop.
    for (let attempt = 0; attempt < 50; attempt++) {
      const srv = await listenOnce();
      held.push(srv);
      const { port } = srv.address();
      if (!handedOut.has(port)) {
        handedOut.add(port);
        return port;
      }
    }
    throw new Error('no free port this process had not handed out, in 50 tries');
  } finally {
    await Promise.all(held.map((srv) => new Promise((resolve) => srv.close(resolve))));
  }
}

async function waitReady(url, child, logFile, readyPath = '/readyz', timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) {
      throw new Error(`${url} exited with ${child.exitCode} before it was ready:\n${tail(logFile)}`);
    }
    try {
      const res = await fetch(`${url}${readyPath}`, { signal: AbortSignal.timeout(1000) });
      if (res.ok) return;
    } catch {
      /* not listening yet */
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} was not ready within ${timeoutMs} ms:\n${tail(logFile)}`);
}

function tail(file) {
  try {
    return fs.readFileSync(file, 'utf8').split('\n').slice(-30).join('\n');
  } catch {
    return '(no log)';
  }
}

/**
 * Starts one service from its build output. Returns { name, url, port, adminUrl, child, logFile, stop,
 * command, args, env }.
 * `stop(signal)` resolves with the exit code. `readyPath` (default /readyz) is polled on the admin
 * port until it answers 200.
 */
async function startService(name, opts) {
  // A port found free may be taken before the service binds it (by any connection's ephemeral
  // port): a service whose ports were chosen here and that found one taken is started again on
  // new ones, at most twice more.
  const chosenHere = !opts.port && !opts.adminPort && !(opts.env && opts.env.ADMIN_PORT);
  for (let attempt = 1; ; attempt++) {
    try {
      return await startServiceOnce(name, opts);
    } catch (error) {
      if (!chosenHere || attempt === 3 || !/EADDRINUSE/.test(String(error.message))) throw error;
    }
  }
}

async function startServiceOnce(name, { port, env = {}, logDir, readyPath, adminPort, nodeArgs = [] }) {
  port = port || (await freePort());
  // Every service serves /readyz, /healthz/deps and /metrics on an admin port of its own, never on its API port.
  adminPort = adminPort || Number(env.ADMIN_PORT) || (await freePort());
  env = { ...env, ADMIN_PORT: String(adminPort) };
  const adminUrl = `http://127.0.0.1:${adminPort}`;
  fs.mkdirSync(logDir, { recursive: true });
  const logFile = path.join(logDir, `${name}-${port}.log`);
  const out = fs.openSync(logFile, 'a');
  const entry = path.join(ROOT, 'services', name, 'dist', 'main.js');
  if (!fs.existsSync(entry)) throw new Error(`${entry} is missing: run "pnpm build" first`);
  const args = [...SERVICE_NODE_ARGS, ...nodeArgs, entry];
  const childEnv = { ...process.env, ...env, PORT: String(port), HOST: '127.0.0.1' };
  const child = spawn(process.execPath, args, { env: childEnv, stdio: ['ignore', out, out] });
  fs.closeSync(out);
  const url = `http://127.0.0.1:${port}`;
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal)));
  const stop = async (signal = 'SIGTERM') => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    return exited;
  };
  await waitReady(adminUrl, child, logFile, readyPath);
  // `command`, `args` and `env` let a caller start the same process again (tools/soak restarts killed services).
  return {
    name,
    url,
    port,
    adminUrl,
    adminPort,
    pid: child.pid,
    child,
    logFile,
    exited,
    stop,
    command: process.execPath,
    args,
    env: childEnv,
  };
}

/**
 * Starts session-service, auth-service, content-service and gateway, in that order, with their
 * own database names (`<prefix>-sessions`, `<prefix>-auth`, `<prefix>-content`) and bucket, so
 * that parallel stacks do not meet.
 */
async function startStack(opts = {}) {
  const prefix = opts.prefix || 'local';
  const logDir = opts.logDir || path.join(ROOT, '.local', 'logs');
  const keysDir = opts.keysDir || path.join(ROOT, '.local', 'dev-keys');
  const { DevKeys, DevReceiptSigner } = require('@cp/credentials');
  await new DevKeys(keysDir).ensure();
  // The content-service signs receipts with a key and self-signed certificate made here once.
  const receiptSigner = new DevReceiptSigner(keysDir);
  await receiptSigner.ensure();
  // Webhook secrets are sealed in Redis under a key made here once (kept: Redis keeps what it sealed).
  const webhookKeyFile = path.join(keysDir, 'webhook-secrets.key');
  if (!fs.existsSync(webhookKeyFile))
    fs.writeFileSync(webhookKeyFile, require('node:crypto').randomBytes(32).toString('base64url'), { mode: 0o600 });
  const webhookSecretKey = fs.readFileSync(webhookKeyFile, 'utf8').trim();
  const backing = backingEnv();
  const ports = opts.ports || {};
  const services = [];
  // Rate limits are off here (tests sign in many times from one address); tests that pin them
  // start services of their own with RATE_LIMIT_ENABLED=true.
  // Every service's audit trail goes to one file beside the logs (its lines are appended whole).
  const auditFile = path.join(logDir, 'audit.jsonl');
  const common = {
    LOG_LEVEL: process.env.LOG_LEVEL || 'info',
    RATE_LIMIT_ENABLED: 'false',
    AUDIT_LOG: auditFile,
    ...(opts.env || {}),
  };
  // The gateway's address goes into Link.Href, so its port is chosen before anything starts.
  const gatewayPort = ports.gateway || (await freePort());
  // One secret per calling service, so each reaches only the internal routes granted to it.
  const secret = () => require('node:crypto').randomBytes(24).toString('hex');
  const internalSecrets = {
    authToSession: secret(),
    contentToSession: secret(),
    ...(opts.internalSecrets || {}),
  };
  const publicBaseUrl = opts.publicBaseUrl || `http://127.0.0.1:${gatewayPort}`;
  const authDatabase = `${prefix}-auth`;
  const sessionEnv = {
    ...backing,
    ...common,
    MONGODB_DATABASE: `${prefix}-sessions`,
    // Api keys and registrations are read from the auth-service's database at refresh.
    REGISTRY_MONGODB_DATABASE: authDatabase,
    INTERNAL_SECRET_AUTH_SERVICE: internalSecrets.authToSession,
    INTERNAL_SECRET_CONTENT_SERVICE: internalSecrets.contentToSession,
    ...(opts.sessionEnv || {}),
  };
  try {
    const session = await startService('session-service', {
      port: ports.session,
      adminPort: ports.sessionAdmin,
      nodeArgs: opts.sessionNodeArgs,
      logDir,
      env: sessionEnv,
    });
    services.push(session);
    const authEnv = {
      ...backing,
      ...common,
      MONGODB_DATABASE: authDatabase,
      SESSION_SERVICE_URL: session.url,
      SESSION_SERVICE_INTERNAL_SECRET: internalSecrets.authToSession,
      PUBLIC_BASE_URL: publicBaseUrl,
      ...(opts.authEnv || {}),
    };
    const auth = await startService('auth-service', {
      port: ports.auth,
      adminPort: ports.authAdmin,
      nodeArgs: opts.authNodeArgs,
      logDir,
      env: authEnv,
    });
    services.push(auth);
    const content = await startService('content-service', {
      port: ports.content,
      adminPort: ports.contentAdmin,
      nodeArgs: opts.contentNodeArgs,
      logDir,
      env: {
        ...backing,
        ...common,
        S3_BUCKET: `${prefix}-contents`,
        S3_CREATE_BUCKET: 'true',
        JWT_ISSUER: DEV_ISSUER,
        JWT_JWKS_FILE: path.join(keysDir, 'jwks.json'),
        SESSION_SERVICE_URL: session.url,
        SESSION_SERVICE_INTERNAL_SECRET: internalSecrets.contentToSession,
        RECEIPT_SIGNING_KEY_FILE: receiptSigner.keyFile,
        RECEIPT_CERTIFICATE_FILE: receiptSigner.certificateFile,
        // S3 is on loopback, reachable by every local client: direct transfer is on unless turned off.
        DIRECT_TRANSFER: process.env.DIRECT_TRANSFER || 'on',
        // The local stack's webhook receivers run on this machine, over plain http.
        WEBHOOK_ALLOW_HTTP: 'true',
        WEBHOOK_SECRET_KEYS: webhookSecretKey,
        WEBHOOK_ALLOW_PRIVATE: 'true',
        ...(opts.contentEnv || {}),
      },
    });
    services.push(content);
    const gateway = await startService('gateway', {
      port: gatewayPort,
      adminPort: ports.gatewayAdmin,
      logDir,
      nodeArgs: opts.gatewayNodeArgs,
      env: {
        ...common,
        CONTENT_SERVICE_URL: content.url,
        AUTH_SERVICE_URL: auth.url,
        SESSION_SERVICE_URL: session.url,
        ...(opts.gatewayEnv || {}),
      },
    });
    services.push(gateway);
    return {
      prefix,
      gatewayUrl: gateway.url,
      gatewayAdminUrl: gateway.adminUrl,
      services,
      backing,
      keysDir,
      receiptCertificateFile: receiptSigner.certificateFile,
      auditFile,
      internalSecrets,
      authDatabase,
      sessionEnv,
      authEnv,
      stop: async () => {
        await Promise.all(services.map((s) => s.stop()));
      },
    };
  } catch (error) {
    await Promise.all(services.map((s) => s.stop()));
    throw error;
  }
}

module.exports = { SERVICE_NODE_ARGS, startStack, startService, backingEnv, freePort, ROOT };

if (require.main === module) {
  // The services' own defaults (their config.ts): API ports 8080-8083, admin ports 9464-9467.
  const ports = {
    gateway: Number(process.env.PORT || 8080),
    gatewayAdmin: Number(process.env.ADMIN_PORT || 9464),
    content: Number(process.env.CONTENT_SERVICE_PORT || 8081),
    contentAdmin: Number(process.env.CONTENT_SERVICE_ADMIN_PORT || 9465),
    auth: Number(process.env.AUTH_SERVICE_PORT || 8082),
    authAdmin: Number(process.env.AUTH_SERVICE_ADMIN_PORT || 9466),
    session: Number(process.env.SESSION_SERVICE_PORT || 8083),
    sessionAdmin: Number(process.env.SESSION_SERVICE_ADMIN_PORT || 9467),
  };
  startStack({ ports, prefix: process.env.CP_PREFIX || 'local' }).then(
    (stack) => {
      for (const s of stack.services)
        process.stdout.write(
          `  ${s.name.padEnd(16)} ${s.url}  admin ${s.adminUrl}  (log: ${path.relative(process.cwd(), s.logFile)})\n`,
        );
      process.stdout.write(
        `\nThe API listens on ${stack.gatewayUrl} — try: curl ${stack.gatewayUrl}/healthz\n(each service's /readyz, /healthz/deps and /metrics: its admin address above)\nCtrl-C stops it.\n`,
      );
      const shutdown = () => stack.stop().then(() => process.exit(0));
      process.once('SIGINT', shutdown);
      process.once('SIGTERM', shutdown);
    },
    (error) => {
      process.stderr.write(`stack: ${error.message}\n`);
      process.exit(1);
    },
  );
}
