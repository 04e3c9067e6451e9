// Shared pieces of the benchmarks: a stack of the services, peak RSS, timing, concurrency.
const fs = require('node:fs');
const { execFileSync, spawn } = require('node:child_process');
const path = require('node:path');
const {
  S3Client,
  CreateMultipartUploadCommand,
  UploadPartCommand,
  CompleteMultipartUploadCommand,
} = require('@aws-sdk/client-s3');
const stack = require('../tools/devstack/stack');

const { backingEnv, ROOT } = stack;

/**
 * Starts the services like tools/devstack/stack.js. With CP_BENCH_PROFILE=<dir> in the environment, every
 * service writes a V8 CPU profile (<name>-<prefix>.cpuprofile) into <dir> when it stops.
 */
function startStack(opts = {}) {
  const dir = process.env.CP_BENCH_PROFILE;
  if (!dir) return stack.startStack(opts);
  // Named by the stack's prefix too, so that a benchmark of two stacks keeps both.
  const tag = opts.prefix ? `-${opts.prefix}` : '';
  const profile = (name) => [
    '--cpu-prof',
    `--cpu-prof-dir=${path.resolve(dir)}`,
    `--cpu-prof-name=${name}${tag}.cpuprofile`,
  ];
  return stack.startStack({
    ...opts,
    contentNodeArgs: profile('content-service'),
    gatewayNodeArgs: profile('gateway'),
    sessionNodeArgs: profile('session-service'),
    authNodeArgs: profile('auth-service'),
  });
}

const MiB = 1024 * 1024;

function ensureBackingServers() {
  execFileSync('bash', [path.join(ROOT, 'deploy/local/backing-servers.sh'), 'start'], { stdio: 'inherit' });
  for (const [k, v] of Object.entries(backingEnv())) process.env[k] = process.env[k] || v;
}

/**
 * Starts a floor of bench/_floor.js (`['receiver']` or `['proxy', targetUrl]`) as a process of its
 * own with the given V8 flags (and `env` added to this process's); resolves once it listens.
 */
async function floorProcess(args, nodeArgs = stack.SERVICE_NODE_ARGS, env = {}) {
  const port = await stack.freePort();
  const child = spawn(
    process.execPath,
    [...nodeArgs, path.join(__dirname, '_floor.js'), args[0], String(port), ...args.slice(1)],
    {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  await new Promise((resolve, reject) => {
    child.stdout.once('data', resolve);
    child.once('exit', (code) => reject(new Error(`floor ${args[0]} exited with ${code}`)));
  });
  return { url: `http://127.0.0.1:${port}`, pid: child.pid, stop: () => child.kill('SIGTERM') };
}

/** Peak resident set size of a process so far (VmHWM), in MiB. */
function peakRssMiB(pid) {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmHWM:\s+(\d+) kB/.exec(status)[1]);
  return kb / 1024;
}

/** Runs `tasks` (functions returning promises) with at most `limit` in flight. */
async function inFlight(limit, tasks) {
  let next = 0;
  const results = new Array(tasks.length);
  await Promise.all(
    Array.from({ length: Math.min(limit, tasks.length) }, async () => {
      while (next < tasks.length) {
        const i = next++;
        results[i] = await tasks[i]();
      }
    }),
  );
  return results;
}

async function timed(fn) {
  const start = process.hrtime.bigint();
  const value = await fn();
  return { seconds: Number(process.hrtime.bigint() - start) / 1e9, value };
}

/** A client of the local S3 server; `overrides` go into its configuration (e.g. `requestHandler: { httpAgent }`). */
function s3Client(overrides = {}) {
  const env = backingEnv();
  return new S3Client({
    endpoint: env.S3_ENDPOINT,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: env.S3_ACCESS_KEY_ID, secretAccessKey: env.S3_SECRET_ACCESS_KEY },
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    ...overrides,
  });
}

async function drain(body) {
  let n = 0;
  for await (const chunk of body) n += chunk.length;
  return n;
}

function mbps(bytes, seconds) {
  return bytes / 1e6 / seconds;
}

/** Starts a new peak for peakRssMiB (Linux: writing 5 to clear_refs resets VmHWM to the current RSS). */
function resetPeakRss(pid) {
  fs.writeFileSync(`/proc/${pid}/clear_refs`, '5');
}

let clockTicks;
/** CPU time (user + system) a process has used so far, in ms, from /proc/<pid>/stat. */
function cpuMs(pid) {
  clockTicks ??= Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return ((Number(f[11]) + Number(f[12])) * 1000) / clockTicks; // fields 14 and 15: utime, stime
}

/** The pid of the process listening on TCP `port` (IPv4 or IPv6), or null when none is found. */
function listeningPid(port) {
  const hexPort = `:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  const inodes = new Set();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text;
    try {
      text = fs.readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length > 9 && f[1].endsWith(hexPort) && f[3] === '0A') inodes.add(`socket:[${f[9]}]`); // 0A: LISTEN
    }
  }
  if (inodes.size === 0) return null;
  for (const pid of fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    let fds;
    try {
      fds = fs.readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        if (inodes.has(fs.readlinkSync(`/proc/${pid}/fd/${fd}`))) return Number(pid);
      } catch {
        /* gone meanwhile */
      }
    }
  }
  return null;
}

/** `--name value` and `--flag` arguments of a benchmark: { name: [value], flag: [] }. */
function benchArgs(argv = process.argv.slice(2)) {
  return Object.fromEntries(
    argv
      .join(' ')
      .split('--')
      .filter(Boolean)
      .map((a) => a.trim().split(/\s+/)),
  );
}

/**
 * A multipart upload of `parts` parts straight to S3, `concurrency` at once: each part sent by
 * `sendPart(k, UploadId)` (1-based; its ETag), by default an UploadPart of `part` (`P` bytes).
 */
async function s3MultipartUpload({ s3, Bucket, Key, parts, concurrency, part, P, sendPart }) {
  const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket, Key }));
  const send =
    sendPart ??
    (async (k) =>
      (await s3.send(new UploadPartCommand({ Bucket, Key, UploadId, PartNumber: k, Body: part, ContentLength: P })))
        .ETag);
  const etags = await inFlight(
    concurrency,
    Array.from({ length: parts }, (_, i) => () => send(i + 1, UploadId)),
  );
  await s3.send(
    new CompleteMultipartUploadCommand({
      Bucket,
      Key,
      UploadId,
      MultipartUpload: { Parts: etags.map((ETag, i) => ({ ETag, PartNumber: i + 1 })) },
    }),
  );
}

module.exports = {
  benchArgs,
  s3MultipartUpload,
  cpuMs,
  listeningPid,
  floorProcess,
  MiB,
  ensureBackingServers,
  peakRssMiB,
  resetPeakRss,
  inFlight,
  timed,
  s3Client,
  drain,
  mbps,
  startStack,
  ROOT,
};

const http = require('node:http');
const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

/**
 * One HTTP request with node:http (the same kind of client the AWS SDK uses, so that gateway and
 * direct-S3 figures compare like with like). The answer's body is drained and counted, or kept
 * when `keep` is set. `agent` replaces the shared keep-alive agent (64 sockets).
 */
function request(method, url, headers, body, { keep = false, agent: via = agent } = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      { method, headers: body ? { ...headers, 'content-length': body.length } : headers, agent: via },
      (res) => {
        const chunks = [];
        let bytes = 0;
        res.on('data', (c) => {
          bytes += c.length;
          if (keep) chunks.push(c);
        });
        res.on('end', () =>
          resolve({ status: res.statusCode, headers: res.headers, bytes, body: keep ? Buffer.concat(chunks) : null }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

module.exports.request = request;
