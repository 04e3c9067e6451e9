// How the content API and sign-in hold up as the stores fill, against the S3 server straight, in one run.
//   pnpm bench scale [--contents 20000] [--concurrency 32] [--seconds 8] [--owners 1]
//                    [--users 10000] [--sessions 100000] [--signin-concurrency 8] [--traced]
// 1. Seeds contents of 10 KiB through the gateway (one-shot POST, 32 in flight) up to 1,000, measures,
//    seeds on up to --contents, measures again. Each measurement: one-shot POST, GET and HEAD of a
//    random stored content through the gateway, and PutObject, GetObject and HeadObject of the same
//    size straight to the same S3 server with @aws-sdk/client-s3 (the gets and heads read the very
//    objects the gateway serves), each for --seconds at --concurrency in flight, keep-alive on both
//    sides. Reads run before writes, so they see exactly the count they are labelled with.
// 2. Registers --users users (a certificate each) and 1,000 sessions in the databases, in bulk, with
//    documents made by the services' own store classes (their built dist/), each session held in
//    the sid cache as sign-in holds it; measures certificate sign-in, refresh of a random stored
//    session, a content GET authorised by the auth.sid of a held session and one of a session the
//    cache does not hold (its entry deleted just before), with a Bearer GET at the same concurrency
//    for reference; then registers sessions up to --sessions and measures the same again.
// With --traced, a second stack of the same services on the same bucket and databases (a replica
// set of its own) traces every request (OTEL_TRACES_SAMPLER=always_on, spans sent as OTLP/HTTP JSON
// to a receiver in this process that reads and drops them): at each point its POST, GET and HEAD
// run right after the untraced stack's, and the summary sets their CPU per request side by side;
// then both stacks are sent the same request rate (half the lower of their two), in alternating
// rounds, since a stack driven at its own saturation answers at another rate, and CPU per request
// changes with the rate.
// Every phase also reports the CPU time each process spent per request (utime + stime from
// /proc/<pid>/stat). The S3, MongoDB-compatible and Redis servers are shared with whatever else runs
// on the machine: their CPU includes any other user's load (the idle rates printed first tell).
const { execFileSync } = require('node:child_process');
const {
  createPrivateKey,
  generateKeyPairSync,
  randomBytes,
  randomUUID,
  webcrypto,
  X509Certificate,
} = require('node:crypto');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const { DeleteObjectsCommand, GetObjectCommand, HeadObjectCommand, PutObjectCommand } = require('@aws-sdk/client-s3');
const { DevKeys } = require('@cp/credentials');
const { Binary, MongoClient } = require('mongodb');
const {
  benchArgs,
  cpuMs,
  drain,
  ensureBackingServers,
  listeningPid,
  request,
  ROOT,
  s3Client,
  startStack,
} = require('./_support');
const { purgeStackData } = require('../tools/devstack/purge');

const USAGE =
  'usage: pnpm bench scale [--contents 20000] [--concurrency 32] [--seconds 8] [--owners 1] [--users 10000] [--sessions 100000] [--signin-concurrency 8] [--traced]';
const args = benchArgs();
const num = (name, fallback) => {
  const value = Number(args[name] ?? fallback);
  if (!Number.isInteger(value) || value < 1) usage(`--${name} must be a positive integer`);
  return value;
};
function usage(problem) {
  process.stderr.write(`${problem ? `bench scale: ${problem}\n` : ''}${USAGE}\n`);
  process.exit(problem ? 2 : 0);
}
const KNOWN = ['contents', 'concurrency', 'seconds', 'owners', 'users', 'sessions', 'signin-concurrency', 'traced'];
if ('help' in args) usage();
for (const name of Object.keys(args)) if (!KNOWN.includes(name)) usage(`unknown option --${name}`);
const CONTENTS = num('contents', 20000);
const CONCURRENCY = num('concurrency', 32);
const SECONDS = num('seconds', 8);
const OWNERS = num('owners', 1);
const USERS = num('users', 10000);
const SESSIONS = num('sessions', 100000);
const SIGNIN_CONCURRENCY = num('signin-concurrency', 8);
const TRACED = 'traced' in args;
if (TRACED && args.traced !== undefined) usage('--traced takes no value');
const FIRST_POINT = 1000;
// Sign-in, refresh and the sid GETs are measured at this many sessions, then at --sessions.
const SIGNIN_FIRST_POINT = 1000;
const WARM_UP_CONTENTS = 100;
const WARM_UP_SECONDS = 3;
const SIZE = 10 * 1024;
// With --traced, CPU per request of both stacks is also compared at one load: this share of the
// lower of their saturated rates, in rounds of this length, alternating which stack goes first.
const EQUAL_LOAD_SHARE = 0.5;
const EQUAL_ROUNDS = 4;
const EQUAL_SECONDS = 4;
const SEED_IN_FLIGHT = 32;
const PROGRESS_EVERY_MS = 5000;
if (CONTENTS < FIRST_POINT) usage(`--contents must be at least ${FIRST_POINT}`);

const AUTH_DIR = path.join(ROOT, 'services', 'auth-service');
const SESSION_DIR = path.join(ROOT, 'services', 'session-service');
// Where the content-service puts a content's object: the direct reads fetch those very objects.
const { contentKey } = require(path.join(ROOT, 'services/content-service/dist/uploads/PartGrid.js'));
// pkijs and asn1js are the auth-service's; the bench borrows them to issue certificates. It opens
// sign-in challenges with the platform's client library.
const { decryptEncryptedKey } = require('../libs/client/dist/EncryptedKey');
const pkijs = require(require.resolve('pkijs', { paths: [AUTH_DIR] }));
const asn1js = require(require.resolve('asn1js', { paths: [AUTH_DIR] }));
pkijs.setEngine('node', new pkijs.CryptoEngine({ name: 'node', crypto: webcrypto }));

const log = (line = '') => process.stdout.write(`${line}\n`);
const openssl = (a) => execFileSync('openssl', a, { stdio: ['ignore', 'pipe', 'pipe'] });
const fmt = (v, digits = 2) => (v === undefined || v === null || Number.isNaN(v) ? 'n/a' : v.toFixed(digits));

function percentile(sorted, p) {
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/** Runs `op(worker)` on `workers` loops for `seconds` (or until `maxCount` calls started); times each call. */
async function forDuration(workers, seconds, op, maxCount = Infinity) {
  const latencies = [];
  let errors = 0;
  let firstError;
  let started = 0;
  const t0 = performance.now();
  const until = t0 + seconds * 1000;
  await Promise.all(
    Array.from({ length: workers }, async (_, w) => {
      while (performance.now() < until && started < maxCount) {
        started++;
        const t = performance.now();
        try {
          await op(w);
          latencies.push(performance.now() - t);
        } catch (error) {
          errors++;
          firstError ??= error.message ?? String(error);
        }
      }
    }),
  );
  return { latencies, errors, firstError, seconds: (performance.now() - t0) / 1000 };
}

/**
 * Sends one `op()` every 1/`rate` s for `seconds` (at most `maxInFlight` at once: one that would pass
 * that is counted as missed), whatever came back; catches up after a late timer. For comparing CPU
 * per request of two stacks at the same load rather than each at its own saturation.
 */
async function paced(rate, maxInFlight, seconds, op) {
  const inFlight = new Set();
  let done = 0;
  let errors = 0;
  let missed = 0;
  let firstError;
  const interval = 1000 / rate;
  const t0 = performance.now();
  const until = t0 + seconds * 1000;
  for (let next = t0; next < until; next += interval) {
    const wait = next - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    if (inFlight.size >= maxInFlight) {
      missed++;
      continue;
    }
    const sent = op(0).then(
      () => void done++,
      (error) => {
        errors++;
        firstError ??= error.message ?? String(error);
      },
    );
    inFlight.add(sent);
    sent.finally(() => inFlight.delete(sent));
  }
  await Promise.all(inFlight);
  return { done, errors, missed, firstError, seconds: (performance.now() - t0) / 1000 };
}

/** The processes whose CPU is read around each phase: { short name: { pid, label } }. */
let processes = {};
const cpuOfAll = () => Object.fromEntries(Object.entries(processes).map(([n, p]) => [n, cpuMs(p.pid)]));

const rows = [];
/** Measures one phase: rate, p50, p99 of the successful calls, and CPU-ms per call of every process. */
async function phase(label, op, { workers = CONCURRENCY, seconds = SECONDS, point = null, mayAllFail = false } = {}) {
  const before = cpuOfAll();
  const r = await forDuration(workers, seconds, op);
  const after = cpuOfAll();
  const calls = r.latencies.length + r.errors;
  const sorted = r.latencies.sort((a, b) => a - b);
  const row = {
    label,
    point,
    workers,
    count: r.latencies.length,
    errors: r.errors,
    firstError: r.firstError,
    seconds: r.seconds,
    rate: r.latencies.length / r.seconds,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    cpu: Object.fromEntries(Object.keys(processes).map((n) => [n, calls ? (after[n] - before[n]) / calls : NaN])),
  };
  rows.push(row);
  log(
    `${label.padEnd(34)} ${String(row.count).padStart(7)} in ${row.seconds.toFixed(1)} s ${fmt(row.rate, 1).padStart(8)}/s   p50 ${fmt(row.p50).padStart(7)} ms   p99 ${fmt(row.p99).padStart(7)} ms` +
      (row.errors ? `   ${row.errors} FAILED (first: ${row.firstError})` : ''),
  );
  log(
    `${''.padEnd(34)} cpu-ms/request: ${Object.keys(processes)
      .map((n) => `${n} ${fmt(row.cpu[n])}`)
      .join(', ')}`,
  );
  if (row.count === 0 && !mayAllFail) throw new Error(`${label}: every request failed; first: ${row.firstError}`);
  return row;
}

/**
 * Waits (at most 60 s) until the MongoDB-compatible server's CPU falls under 100 ms per second:
 * requests a phase gave up on may still be scanning there, and would weigh on the next phase.
 */
async function settleDatabase() {
  if (!processes.mongo) return;
  const started = performance.now();
  for (;;) {
    const before = cpuMs(processes.mongo.pid);
    await new Promise((r) => setTimeout(r, 1000));
    if (cpuMs(processes.mongo.pid) - before < 100 || performance.now() - started > 60_000) break;
  }
  log(`  (the database settled in ${((performance.now() - started) / 1000).toFixed(0)} s)`);
}

function check(res, status, what) {
  if (res.status !== status)
    throw new Error(`${what} answered ${res.status}${res.body ? `: ${String(res.body).slice(0, 200)}` : ''}`);
}

async function main() {
  ensureBackingServers();
  const prefix = `bench${Date.now().toString(36)}`;
  log(
    `bench scale: contents of ${SIZE / 1024} KiB up to ${CONTENTS} (${OWNERS} owner(s)), ${CONCURRENCY} in flight, ${SECONDS} s per phase; ` +
      `${USERS} users, ${SESSIONS} sessions, sign-in phases at ${SIGNIN_CONCURRENCY} in flight`,
  );
  const stack = await startStack({ prefix, env: { LOG_LEVEL: 'warn' } });
  // The traced stack: the same prefix, so the same bucket and databases, as replicas would share them.
  const sink = TRACED ? await spanSink() : null;
  const traced = TRACED
    ? await startStack({
        prefix,
        env: { LOG_LEVEL: 'warn', OTEL_EXPORTER_OTLP_ENDPOINT: sink.url, OTEL_TRACES_SAMPLER: 'always_on' },
      }).catch(async (error) => {
        await stack.stop();
        throw error;
      })
    : null;
  const s3Bucket = `${prefix}-contents`; // tools/devstack/stack.js: the content-service's bucket
  const gwAgent = new http.Agent({
    keepAlive: true,
    maxSockets: Math.max(CONCURRENCY, SIGNIN_CONCURRENCY, SEED_IN_FLIGHT),
  });
  const s3Agent = new http.Agent({ keepAlive: true, maxSockets: Math.max(CONCURRENCY, SEED_IN_FLIGHT) });
  const s3 = s3Client({ requestHandler: { httpAgent: s3Agent } });
  const contents = []; // { owner, id } of every stored content
  const directKeys = []; // objects PutObject wrote straight to S3
  let cleaned = false;
  let closeSignIn; // the sign-in seeding's MongoDB and Redis clients, once open
  const cleanup = async () => {
    if (cleaned) return;
    cleaned = true;
    const t = performance.now();
    await closeSignIn?.().catch(() => undefined);
    await stack.stop();
    await traced?.stop();
    sink?.close();
    // purgeStackData deletes objects one by one; the bulk of them go here in batches of 1,000 first.
    const keys = [...contents.map((c) => contentKey(c.owner, c.id)), ...directKeys];
    let next = 0;
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while (next < keys.length) {
          const batch = keys.slice(next, next + 1000);
          next += 1000;
          await s3
            .send(
              new DeleteObjectsCommand({
                Bucket: s3Bucket,
                Delete: { Objects: batch.map((Key) => ({ Key })), Quiet: true },
              }),
            )
            .catch(() => undefined);
        }
      }),
    );
    await purgeStackData(stack.prefix, stack.backing);
    s3.destroy();
    gwAgent.destroy();
    log(
      `\ncleaned up (stack stopped, bucket and databases of ${prefix} removed) in ${((performance.now() - t) / 1000).toFixed(1)} s`,
    );
  };
  for (const signal of ['SIGINT', 'SIGTERM']) {
    process.once(signal, () => {
      log(`\n${signal}: cleaning up`);
      cleanup().finally(() => process.exit(130));
    });
  }
  try {
    const byName = Object.fromEntries(stack.services.map((s) => [s.name, s]));
    const comm = (pid) => fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
    const portOf = (url) => Number(new URL(url).port);
    processes = {
      gateway: { pid: byName.gateway.pid, label: 'gateway' },
      content: { pid: byName['content-service'].pid, label: 'content-service' },
      auth: { pid: byName['auth-service'].pid, label: 'auth-service' },
      session: { pid: byName['session-service'].pid, label: 'session-service' },
    };
    for (const [short, what, url] of [
      ['s3', 'S3 server', stack.backing.S3_ENDPOINT],
      ['mongo', 'MongoDB-compatible server', stack.backing.MONGODB_URL],
      ['redis', 'Redis', stack.backing.REDIS_URL],
    ]) {
      const pid = listeningPid(portOf(url));
      if (pid) processes[short] = { pid, label: `${what} (${comm(pid)})` };
      else log(`note: no process found listening for ${what} at ${url}; its CPU is not reported`);
    }
    processes.client = { pid: process.pid, label: 'this bench process (the client)' };
    log(
      `processes: ${Object.entries(processes)
        .map(([n, p]) => `${n} = ${p.label} pid ${p.pid}`)
        .join('; ')}`,
    );

    // What the shared processes burn with nothing from us: the noise under their cpu-ms/request.
    const idleBefore = cpuOfAll();
    const idleT = performance.now();
    await new Promise((r) => setTimeout(r, 2000));
    const idleAfter = cpuOfAll();
    const idleSeconds = (performance.now() - idleT) / 1000;
    const idle = Object.fromEntries(
      Object.keys(processes).map((n) => [n, (idleAfter[n] - idleBefore[n]) / idleSeconds]),
    );
    log(
      `idle CPU before the run, ms per s: ${Object.keys(processes)
        .map((n) => `${n} ${fmt(idle[n], 1)}`)
        .join(', ')}\n`,
    );

    const owners = Array.from({ length: OWNERS }, () => randomUUID());
    const token = await new DevKeys(stack.keysDir).mint({ owners, ttlSeconds: 24 * 3600 });
    const bearer = { authorization: `Bearer ${token}` };
    const gw = stack.gatewayUrl;
    const body = randomBytes(SIZE);
    const opts = { agent: gwAgent, keep: false };
    const pickOwner = () => owners[Math.floor(Math.random() * owners.length)];

    const post = async () => {
      const owner = pickOwner();
      const res = await request('POST', `${gw}/v1/${owner}/contents`, bearer, body, { agent: gwAgent, keep: true });
      check(res, 201, 'POST');
      contents.push({ owner, id: JSON.parse(res.body).id });
    };

    // Seeding: POSTs with SEED_IN_FLIGHT in flight until `target` contents are stored.
    const seeding = { contents: 0, seconds: 0, cpu: {} };
    const seedTo = async (target) => {
      if (contents.length >= target) return;
      const from = contents.length;
      const before = cpuOfAll();
      const t0 = performance.now();
      let last = t0;
      let pending = 0;
      let failures = 0;
      await Promise.all(
        Array.from({ length: SEED_IN_FLIGHT }, async () => {
          while (contents.length + pending < target) {
            pending++;
            try {
              await post();
            } catch (error) {
              if (++failures > 100 + target / 100)
                throw new Error(`seeding: ${failures} POSTs failed; the last: ${error.message}`, { cause: error });
            } finally {
              pending--;
            }
            const now = performance.now();
            if (now - last >= PROGRESS_EVERY_MS) {
              last = now;
              log(
                `  seeding: ${contents.length} of ${target} stored, ${((contents.length - from) / ((now - t0) / 1000)).toFixed(0)}/s`,
              );
            }
          }
        }),
      );
      const after = cpuOfAll();
      const seconds = (performance.now() - t0) / 1000;
      const n = contents.length - from;
      seeding.contents += n;
      seeding.seconds += seconds;
      for (const p of Object.keys(processes)) seeding.cpu[p] = (seeding.cpu[p] ?? 0) + after[p] - before[p];
      log(
        `seeded ${n} contents (${from} -> ${contents.length}) in ${seconds.toFixed(1)} s: ${(n / seconds).toFixed(0)}/s` +
          (failures ? `, ${failures} POSTs failed and were retried` : ''),
      );
    };

    const randomContent = (upTo) => contents[Math.floor(Math.random() * upTo)];
    const tgw = traced?.gatewayUrl;
    const tracedOps = (upTo) => ({
      'GET traced': async () => {
        const c = randomContent(upTo);
        const res = await request('GET', `${tgw}/v1/${c.owner}/contents/${c.id}`, bearer, null, opts);
        check(res, 200, 'GET traced');
        if (res.bytes !== SIZE) throw new Error(`GET returned ${res.bytes} bytes`);
      },
      'HEAD traced': async () => {
        const c = randomContent(upTo);
        check(await request('HEAD', `${tgw}/v1/${c.owner}/contents/${c.id}`, bearer, null, opts), 200, 'HEAD traced');
      },
      'POST traced': async () => {
        const owner = pickOwner();
        const res = await request('POST', `${tgw}/v1/${owner}/contents`, bearer, body, { agent: gwAgent, keep: true });
        check(res, 201, 'POST traced');
        contents.push({ owner, id: JSON.parse(res.body).id });
      },
    });
    // The traced stack's gateway and content-service stand in for the untraced ones while its phases run.
    const tracedProcesses = traced && {
      gateway: { pid: traced.services.find((x) => x.name === 'gateway').pid, label: 'gateway (traced)' },
      content: {
        pid: traced.services.find((x) => x.name === 'content-service').pid,
        label: 'content-service (traced)',
      },
    };
    // Both stacks at the same request rate, alternating rounds; medians of each stack's CPU-ms per
    // request (gateway + content-service) and the spread of the untraced rounds (the run's noise).
    const cpuOfStack = (s) =>
      ['gateway', 'content-service'].reduce((n, name) => n + cpuMs(s.services.find((x) => x.name === name).pid), 0);
    const equalLoad = async (label, offOp, onOp, saturatedRate) => {
      const rate = Math.max(10, Math.round(saturatedRate * EQUAL_LOAD_SHARE));
      const runs = { off: [], on: [] };
      let missed = 0;
      for (let round = 0; round < EQUAL_ROUNDS; round++) {
        for (const which of round % 2 === 0 ? ['off', 'on'] : ['on', 'off']) {
          const s = which === 'off' ? stack : traced;
          const before = cpuOfStack(s);
          const r = await paced(rate, CONCURRENCY, EQUAL_SECONDS, which === 'off' ? offOp : onOp);
          if (r.errors) throw new Error(`${label} (${which}): ${r.errors} failed, first: ${r.firstError}`);
          missed += r.missed;
          runs[which].push({ cpu: (cpuOfStack(s) - before) / r.done, rate: r.done / r.seconds });
        }
      }
      const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
      const offCpu = runs.off.map((r) => r.cpu);
      const row = {
        rate,
        missed,
        off: { cpu: median(offCpu), rate: median(runs.off.map((r) => r.rate)) },
        on: { cpu: median(runs.on.map((r) => r.cpu)), rate: median(runs.on.map((r) => r.rate)) },
        spread: (Math.max(...offCpu) - Math.min(...offCpu)) / median(offCpu),
      };
      log(
        `${`${label} at ${rate}/s`.padEnd(34)} cpu-ms/request off ${fmt(row.off.cpu)}, traced ${fmt(row.on.cpu)}: ` +
          `${fmt(row.on.cpu / row.off.cpu)} (untraced rounds spread ${(row.spread * 100).toFixed(0)} %${missed ? `, ${missed} requests missed` : ''})`,
      );
      return row;
    };
    const tracedPhase = async (label, op, options) => {
      const untraced = processes;
      processes = { ...processes, ...tracedProcesses };
      try {
        return await phase(label, op, options);
      } finally {
        processes = untraced;
      }
    };
    const ops = (upTo) => ({
      'GET gateway': async () => {
        const c = randomContent(upTo);
        const res = await request('GET', `${gw}/v1/${c.owner}/contents/${c.id}`, bearer, null, opts);
        check(res, 200, 'GET');
        if (res.bytes !== SIZE) throw new Error(`GET returned ${res.bytes} bytes`);
      },
      'GetObject S3': async () => {
        const c = randomContent(upTo);
        const out = await s3.send(new GetObjectCommand({ Bucket: s3Bucket, Key: contentKey(c.owner, c.id) }));
        const n = await drain(out.Body);
        if (n !== SIZE) throw new Error(`GetObject returned ${n} bytes`);
      },
      'HEAD gateway': async () => {
        const c = randomContent(upTo);
        check(await request('HEAD', `${gw}/v1/${c.owner}/contents/${c.id}`, bearer, null, opts), 200, 'HEAD');
      },
      'HeadObject S3': async () => {
        const c = randomContent(upTo);
        await s3.send(new HeadObjectCommand({ Bucket: s3Bucket, Key: contentKey(c.owner, c.id) }));
      },
      'POST gateway': post,
      // Into the content-service's bucket and folder, as its own PutObject, so both write into a folder of one size.
      'PutObject S3': async () => {
        const Key = contentKey(pickOwner(), randomUUID());
        await s3.send(
          new PutObjectCommand({
            Bucket: s3Bucket,
            Key,
            Body: body,
            ContentLength: SIZE,
            ContentType: 'application/octet-stream',
          }),
        );
        directKeys.push(Key);
      },
    });
    const PAIRS = [
      ['GET', 'GET gateway', 'GetObject S3'],
      ['HEAD', 'HEAD gateway', 'HeadObject S3'],
      ['POST', 'POST gateway', 'PutObject S3'],
    ];

    // Warm-up (not measured): connections, JIT and caches of both paths, on a few contents, before the
    // first point. Its POSTs are stored contents like the seeding's, so they stop short of that point.
    await seedTo(WARM_UP_CONTENTS);
    {
      const o = ops(contents.length);
      for (const name of ['GET gateway', 'GetObject S3', 'HEAD gateway', 'HeadObject S3', 'PutObject S3'])
        await forDuration(CONCURRENCY, WARM_UP_SECONDS, o[name]);
      await forDuration(CONCURRENCY, WARM_UP_SECONDS, post, FIRST_POINT - 2 * WARM_UP_CONTENTS);
      if (traced) {
        const t = tracedOps(WARM_UP_CONTENTS);
        for (const name of ['GET traced', 'HEAD traced']) await forDuration(CONCURRENCY, WARM_UP_SECONDS, t[name]);
        await forDuration(
          CONCURRENCY,
          WARM_UP_SECONDS,
          t['POST traced'],
          Math.max(0, FIRST_POINT - contents.length - 50),
        );
      }
    }
    const points = [];
    for (const target of [...new Set([FIRST_POINT, CONTENTS])]) {
      await seedTo(target);
      const stored = contents.length;
      const o = ops(stored);
      // The S3 keys must be the content-service's: one HeadObject tells.
      const probe = contents[0];
      await s3
        .send(new HeadObjectCommand({ Bucket: s3Bucket, Key: contentKey(probe.owner, probe.id) }))
        .catch((error) => {
          throw new Error(
            `content ${probe.id} is not at S3 key ${contentKey(probe.owner, probe.id)} (${error.name}): the direct reads would miss`,
            {
              cause: error,
            },
          );
        });
      log(`\nat ${stored} stored contents (${CONCURRENCY} in flight, ${SECONDS} s each; reads first, then writes):`);
      const point = { stored, rows: {}, traced: {} };
      const t = traced && tracedOps(stored);
      // Gateway and S3 back to back, reads before writes; the traced stack right after the untraced
      // one at the first point, right before it at the next (neither always meets a warmer machine).
      const tracedFirst = points.length % 2 === 1;
      for (const [op, gwName, s3Name] of PAIRS) {
        const tracedRun = async () => {
          if (t) point.traced[op] = await tracedPhase(`${op} traced @${stored}`, t[`${op} traced`], { point: stored });
        };
        if (tracedFirst) await tracedRun();
        for (const name of [gwName, s3Name])
          point.rows[name] = await phase(`${name} @${stored}`, o[name], { point: stored });
        if (!tracedFirst) await tracedRun();
      }
      if (t) {
        log(`  both stacks at one load (${EQUAL_ROUNDS} rounds of ${EQUAL_SECONDS} s each, alternating, medians):`);
        point.equal = {};
        for (const [op, gwName] of PAIRS)
          point.equal[op] = await equalLoad(
            `${op} @${stored}`,
            o[gwName],
            t[`${op} traced`],
            Math.min(point.rows[gwName].rate, point.traced[op].rate),
          );
      }
      point.after = contents.length;
      points.push(point);
    }

    // ---- PUT of a chunk, with 10 and with 1,000 uploads unfinished ----
    // Each worker writes the next 10 KiB chunk of its own upload (a staged piece, as a client sending
    // small chunks does); ten fresh uploads are written with ten and with a thousand held.
    const UNFINISHED_TOTAL = 2 * 64 * 1024 * 1024;
    const unfinished = [];
    const openUpload = async () => {
      const owner = pickOwner();
      const res = await request(
        'POST',
        `${gw}/v1/${owner}/contents`,
        { ...bearer, 'content-range': `bytes 0-${SIZE - 1}/${UNFINISHED_TOTAL}` },
        body,
        { ...opts, keep: true },
      );
      check(res, 201, 'POST of a first chunk');
      unfinished.push({ owner, id: JSON.parse(res.body).id, next: SIZE });
    };
    // Each phase writes the ten uploads opened last, fresh ones: a part's pieces grow with every chunk,
    // so writing the same uploads again would measure their growth, not the uploads held.
    let firstWritten = 0;
    const putChunk = async (w) => {
      const u = unfinished[firstWritten + w];
      const at = u.next;
      u.next += SIZE;
      const res = await request(
        'PUT',
        `${gw}/v1/${u.owner}/contents/${u.id}`,
        { ...bearer, 'content-range': `bytes ${at}-${at + SIZE - 1}/${UNFINISHED_TOTAL}` },
        body,
        opts,
      );
      check(res, 200, 'PUT of a chunk');
    };
    const PUT_WORKERS = 10;
    const unfinishedRows = {};
    for (const held of [PUT_WORKERS, 1000]) {
      while (unfinished.length < held)
        await Promise.all(Array.from({ length: Math.min(SEED_IN_FLIGHT, held - unfinished.length) }, openUpload));
      firstWritten = held - PUT_WORKERS;
      log(
        `\nwith ${unfinished.length} uploads unfinished (${PUT_WORKERS} in flight, each on its own upload, ${SECONDS} s):`,
      );
      unfinishedRows[held] = await phase(`PUT 10 KiB chunk, ${held} unfinished`, putChunk, {
        workers: PUT_WORKERS,
        point: `unfinished ${held}`,
      });
    }

    // ---- sign-in at scale: at SIGNIN_FIRST_POINT sessions, then at --sessions ----
    log(`\nregistering ${USERS} users in bulk, with the services' own store classes:`);
    const signin = await seedSignIn(stack, owners);
    closeSignIn = signin.close;
    const gwUrl = stack.gatewayUrl;
    const signInOnce = async (user) => {
      const a = await request(
        'POST',
        `${gwUrl}/auth/v5.13/authenticate-by-cert?apiKey=${signin.apiKey}`,
        {},
        user.pem,
        { agent: gwAgent, keep: true },
      );
      check(a, 200, 'authenticate-by-cert');
      const { EncryptedKey, Link } = JSON.parse(a.body);
      const rnd = await decryptEncryptedKey(EncryptedKey, user.pem, signin.keyPem);
      const b = await request(
        'POST',
        `${Link.Href}&apiKey=${signin.apiKey}`,
        { 'content-type': 'application/octet-stream' },
        rnd,
        {
          agent: gwAgent,
          keep: true,
        },
      );
      check(b, 200, 'approve-cert');
      return JSON.parse(b.body);
    };
    // One sign-in (rnd) per user at a time, one refresh per session at a time: workers take a free one.
    const busy = new Set();
    const takeFree = (n) => {
      for (;;) {
        const i = Math.floor(Math.random() * n);
        if (!busy.has(i)) {
          busy.add(i);
          return i;
        }
      }
    };
    const withFree = (n, fn) => async () => {
      const i = takeFree(n);
      try {
        await fn(i);
      } finally {
        busy.delete(i);
      }
    };
    const byOwner = new Map(owners.map((o) => [o, []]));
    for (const c of contents) byOwner.get(c.owner).push(c.id);
    const signInPoints = [];
    for (const target of [...new Set([Math.min(SIGNIN_FIRST_POINT, SESSIONS), SESSIONS])]) {
      log(`\nregistering sessions up to ${target} in bulk:`);
      await signin.addSessionsTo(target);
      const sessions = signin.sessions;
      const at = `@${sessions.length}`;
      const sopts = { workers: SIGNIN_CONCURRENCY, point: `signin ${at}` };
      log(
        `\nwith ${USERS} users and ${sessions.length} sessions registered (${SIGNIN_CONCURRENCY} in flight, ${SECONDS} s each):`,
      );
      // Warm-up, as long as a row: 64 sign-ins left the auth-service's code cold for the first row
      // (its CPU per sign-in was 21% above the second row's, whatever the sessions stored).
      await forDuration(
        SIGNIN_CONCURRENCY,
        SECONDS,
        withFree(USERS, (i) => signInOnce(signin.users[i])),
        1000,
      );
      const signInRow = await phase(
        `sign-in (authenticate+approve) ${at}`,
        withFree(USERS, (i) => signInOnce(signin.users[i])),
        sopts,
      );
      await settleDatabase();
      const refreshRow = await phase(
        `refresh of a stored session ${at}`,
        withFree(sessions.length, async (i) => {
          const s = sessions[i];
          // Until its answer comes, the session's pair is unknown: a refresh answered 503 may still
          // have rotated it (a client would retry within the grace window). Such a session is left
          // out of the sid GETs below, which would otherwise count its old sid's 401s.
          s.unknown = true;
          const r = await request(
            'POST',
            `${gwUrl}/sessions/v5.13/sessions/refresh?auth.sid=${s.Sid}&refresh-token=${s.RefreshToken}&api-key=${signin.apiKey}`,
            {},
            null,
            { agent: gwAgent, keep: true },
          );
          check(r, 200, 'refresh');
          const pair = JSON.parse(r.body);
          s.Sid = pair.Sid;
          s.RefreshToken = pair.RefreshToken;
          s.unknown = false;
        }),
        { ...sopts, mayAllFail: true },
      );
      const known = sessions.filter((s) => !s.unknown);
      if (known.length < sessions.length)
        log(
          `  ${sessions.length - known.length} session(s) whose refresh was not answered 200 are left out of the sid GETs`,
        );
      const getBySid = async (s) => {
        const ids = byOwner.get(s.owner);
        const id = ids[Math.floor(Math.random() * ids.length)];
        const res = await request(
          'GET',
          `${gwUrl}/v1/${s.owner}/contents/${id}`,
          { authorization: `auth.sid ${s.Sid}` },
          null,
          opts,
        );
        check(res, 200, 'GET with auth.sid');
      };
      const sidRow = await phase(
        `GET, auth.sid of a held session ${at}`,
        withFree(known.length, (i) => getBySid(known[i])),
        sopts,
      );
      await settleDatabase();
      // A session the cache does not hold (evicted, or Redis replaced): its entry is deleted right
      // before the GET (one Redis DEL, timed with it), which then reads the database and holds it again.
      const sidMissRow = await phase(
        `GET, auth.sid not in the sid cache ${at}`,
        withFree(known.length, async (i) => {
          await signin.forget(known[i].Sid);
          await getBySid(known[i]);
        }),
        { ...sopts, mayAllFail: true },
      );
      const bearerRow = await phase(
        `GET, Bearer (reference) ${at}`,
        async () => {
          const c = randomContent(contents.length);
          check(
            await request('GET', `${gwUrl}/v1/${c.owner}/contents/${c.id}`, bearer, null, opts),
            200,
            'GET with Bearer',
          );
        },
        sopts,
      );
      signInPoints.push({ sessions: sessions.length, rows: [signInRow, refreshRow, sidRow, sidMissRow, bearerRow] });
    }

    summary({
      points,
      seeding,
      signInPoints,
      idle,
      pairs: PAIRS,
      unfinishedRows,
      spanBytes: sink?.bytes(),
    });
  } finally {
    await cleanup();
  }
}

/**
 * A CA (trusted with `pnpm admin trust add`), an api key (`pnpm admin apikey create`), USERS users
 * with one certificate each and SESSIONS sessions over them, written in bulk. The documents are made
 * by the services' own code from dist/: UserRegistry.upsertUser and addCertificate (with the
 * certificate document built as `admin user add` builds it), and SessionService.create through
 * SessionRepository.insertFamily and insertPair, each running against collections that only collect
 * what they are given; the collected documents then go in with insertMany. The users share one
 * RSA-2048 key (a certificate each, issued here with pkijs): issuing 10,000 keys would take minutes.
 */
async function seedSignIn(stack, owners) {
  const t0 = performance.now();
  const env = { ...process.env, MONGODB_URL: stack.backing.MONGODB_URL, MONGODB_DATABASE: stack.authDatabase };
  const admin = (...a) =>
    execFileSync(process.execPath, [path.join(AUTH_DIR, 'dist/admin/cli.js'), ...a], { env })
      .toString()
      .trim();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cp-bench-scale-'));
  let apiKey;
  let caCert;
  let caKey;
  try {
    openssl([
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      '2',
      '-subj',
      '/CN=Bench Scale CA',
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign',
      '-keyout',
      `${dir}/ca.key`,
      '-out',
      `${dir}/ca.pem`,
    ]);
    admin('trust', 'add', '--cert', `${dir}/ca.pem`);
    apiKey = admin('apikey', 'create', '--label', 'bench-scale');
    caCert = pkijs.Certificate.fromBER(
      new Uint8Array(new X509Certificate(fs.readFileSync(`${dir}/ca.pem`)).raw).buffer,
    );
    const caKeyDer = createPrivateKey(fs.readFileSync(`${dir}/ca.key`)).export({ type: 'pkcs8', format: 'der' });
    caKey = await webcrypto.subtle.importKey('pkcs8', caKeyDer, { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' }, false, [
      'sign',
    ]);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  const userKey = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'der' },
    privateKeyEncoding: { type: 'pkcs8', format: 'der' },
  });
  const spki = new Uint8Array(userKey.publicKey).buffer;
  const issue = async (i) => {
    const cert = new pkijs.Certificate();
    cert.version = 2;
    const serial = randomBytes(16);
    serial[0] = (serial[0] & 0x7f) | 0x01; // positive, no leading zero
    cert.serialNumber = new asn1js.Integer({ valueHex: new Uint8Array(serial).buffer });
    cert.issuer = caCert.subject;
    cert.subject.typesAndValues.push(
      new pkijs.AttributeTypeAndValue({
        type: '2.5.4.3',
        value: new asn1js.Utf8String({ value: `bench-scale-user-${i}` }),
      }),
    );
    cert.notBefore.value = new Date(Date.now() - 3600_000);
    cert.notAfter.value = new Date(Date.now() + 2 * 24 * 3600_000);
    cert.subjectPublicKeyInfo = pkijs.PublicKeyInfo.fromBER(spki);
    await cert.sign(caKey, 'SHA-256');
    return Buffer.from(cert.toSchema(true).toBER(false));
  };

  // The services' own classes, from their build output.
  const { UserRegistry } = require(path.join(ROOT, 'libs', 'registry', 'dist', 'UserRegistry.js'));
  const { parseDer } = require(path.join(AUTH_DIR, 'dist/certificates/CertificateText.js'));
  const { dnText } = require(path.join(AUTH_DIR, 'dist/certificates/CertificateFacts.js'));
  const { SessionRepository } = require(path.join(SESSION_DIR, 'dist/store/SessionRepository.js'));
  const { SessionService } = require(path.join(SESSION_DIR, 'dist/sessions/SessionService.js'));
  const { loadConfig } = require(path.join(SESSION_DIR, 'dist/config.js'));
  const collecting = () => ({
    docs: [],
    insertOne(doc) {
      this.docs.push(doc);
      return Promise.resolve({ acknowledged: true, insertedId: doc._id });
    },
    findOne: () => Promise.resolve(null),
  });

  // Users and certificates
  const registrySink = Object.create(UserRegistry.prototype);
  registrySink.users = collecting();
  registrySink.certificates = collecting();
  const users = new Array(USERS);
  let nextUser = 0;
  const now = new Date();
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (nextUser < USERS) {
        const i = nextUser++;
        const der = await issue(i);
        const leaf = parseDer(der);
        const userId = randomUUID();
        const owner = owners[i % owners.length];
        const saved = await registrySink.upsertUser(userId, [owner], now);
        // As `admin user add` writes it.
        await registrySink.addCertificate({
          _id: leaf.thumbprint,
          userId: saved._id,
          subject: dnText(leaf.cert.subject),
          notAfter: leaf.cert.notAfter.value,
          der: new Binary(leaf.der),
          addedAt: now,
        });
        users[i] = {
          userId: saved._id,
          owners: saved.owners,
          thumbprint: leaf.thumbprint,
          pem: Buffer.from(
            `-----BEGIN CERTIFICATE-----\n${der.toString('base64').replace(/.{64}/g, '$&\n')}\n-----END CERTIFICATE-----\n`,
          ),
        };
      }
    }),
  );

  // Sessions: SessionService.create, with the lifetimes the running session-service read from its environment.
  const config = loadConfig({ ...process.env, ...stack.sessionEnv });
  const repoSink = Object.create(SessionRepository.prototype);
  const quiet = { info() {}, warn() {}, error() {}, debug() {} };
  // What SessionService.create holds in the Redis cache (the sid for its life), written after the documents.
  let held = [];
  const cacheSink = { hold: async (sidHash, session, now) => void held.push([sidHash, session, now]) };
  const service = new SessionService(
    repoSink,
    cacheSink,
    () => new Date(),
    {
      sidTtlMs: config.SID_TTL_SECONDS * 1000,
      refreshTtlMs: config.REFRESH_TTL_SECONDS * 1000,
      maxLifetimeMs: config.SESSION_MAX_LIFETIME_SECONDS * 1000,
      graceMs: config.REFRESH_GRACE_SECONDS * 1000,
    },
    quiet,
    null,
  );

  const mongo = await MongoClient.connect(stack.backing.MONGODB_URL, { serverSelectionTimeoutMS: 5000 });
  const { connectRedis, closeRedis } = require(path.join(ROOT, 'libs/redis/dist/index.js'));
  const { SessionCache, tokenHash } = require(path.join(ROOT, 'libs/session-cache/dist/index.js'));
  const redis = connectRedis(stack.backing.REDIS_URL, quiet);
  const close = async () => {
    await mongo.close();
    await closeRedis(redis);
  };
  const written = {};
  const registry = new UserRegistry(mongo.db(stack.authDatabase));
  const repo = new SessionRepository(mongo.db(stack.sessionEnv.MONGODB_DATABASE));
  const bulk = async (name, collection, docs) => {
    const t = performance.now();
    for (let k = 0; k < docs.length; k += 1000)
      await collection.insertMany(docs.slice(k, k + 1000), { ordered: false });
    const w = (written[name] ??= { count: 0, seconds: 0 });
    w.count += docs.length;
    w.seconds += (performance.now() - t) / 1000;
    log(`  ${name}: ${docs.length} documents in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  };
  try {
    await registry.ensureIndexes();
    await repo.ensureIndexes();
    await bulk('users', registry.users, registrySink.users.docs);
    await bulk('certificates', registry.certificates, registrySink.certificates.docs);
    for (let i = 0; i < 250 && !redis.isReady; i++) await new Promise((r) => setTimeout(r, 20));
  } catch (error) {
    await close();
    throw error;
  }
  const cache = new SessionCache(redis, config.CACHE_TTL_SECONDS, config.SID_TTL_SECONDS);
  const tUsers = performance.now();
  log(`  ${USERS} users and certificates made and written in ${((tUsers - t0) / 1000).toFixed(1)} s`);

  const sessions = [];
  /** Makes and writes sessions until `total` are registered, each held in the sid cache as sign-in holds it. */
  const addSessionsTo = async (total) => {
    const t = performance.now();
    repoSink.families = collecting();
    repoSink.pairs = collecting();
    repoSink.refreshKeys = collecting();
    held = [];
    const from = sessions.length;
    for (let j = from; j < total; j++) {
      const u = users[j % USERS];
      const issued = await service.create(u.userId, u.owners, u.thumbprint);
      sessions.push({ Sid: issued.Sid, RefreshToken: issued.RefreshToken, owner: u.owners[0] });
    }
    await bulk('session_families', repo.families, repoSink.families.docs);
    await bulk('session_pairs', repo.pairs, repoSink.pairs.docs);
    await bulk('session_refresh_keys', repo.refreshKeys, repoSink.refreshKeys.docs);
    for (let k = 0; k < held.length; k += 1000)
      await Promise.all(held.slice(k, k + 1000).map(([h, session, now]) => cache.hold(h, session, now)));
    const counted = {
      users: await registry.users.countDocuments(),
      certificates: await registry.certificates.countDocuments(),
      families: await repo.families.countDocuments(),
      pairs: await repo.pairs.countDocuments(),
    };
    log(
      `  ${total - from} sessions made, written and held in the sid cache in ${((performance.now() - t) / 1000).toFixed(1)} s; ` +
        `in the databases now: ${counted.users} users, ${counted.certificates} certificates, ${counted.families} session families, ${counted.pairs} session pairs`,
    );
    if (counted.users < USERS || counted.pairs < total)
      throw new Error(`seeding sign-in: fewer documents than asked for: ${JSON.stringify(counted)}`);
  };
  // The cache entry of a sid (SessionCache's key, `sess:<sidHash>`), removed as an eviction would.
  const forget = async (sid) => {
    await redis.del(`sess:${tokenHash(sid)}`);
  };
  return {
    apiKey,
    users,
    sessions,
    keyPem: createPrivateKey({ key: Buffer.from(userKey.privateKey), format: 'der', type: 'pkcs8' }).export({
      type: 'pkcs8',
      format: 'pem',
    }),
    written,
    addSessionsTo,
    forget,
    close,
  };
}

/** Where the traced stack sends its spans: read, counted and dropped. */
async function spanSink() {
  let bytes = 0;
  const server = http.createServer((req, res) => {
    req.on('data', (c) => (bytes += c.length));
    req.on('end', () => res.end('{}'));
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${server.address().port}`, bytes: () => bytes, close: () => server.close() };
}

function summary({ points, seeding, signInPoints, idle, pairs, unfinishedRows, spanBytes }) {
  const names = Object.keys(processes);
  const ratio = (a, b) => (a === undefined || b === undefined || !b ? 'n/a' : (a / b).toFixed(2));
  const line = (cells, widths) =>
    cells.map((c, i) => (i === 0 ? String(c).padEnd(widths[i]) : String(c).padStart(widths[i]))).join('  ');
  log('\n================ summary (every figure measured in this run) ================');
  log(
    `contents: ${SIZE / 1024} KiB, ${CONCURRENCY} in flight, ${SECONDS} s per phase, keep-alive agents both sides; ` +
      `seeding: ${seeding.contents} contents by POST through the gateway, ${SEED_IN_FLIGHT} in flight, ${(seeding.contents / seeding.seconds).toFixed(0)}/s over ${seeding.seconds.toFixed(1)} s`,
  );
  const w = [22, 9, 9, 9, 9, 9, 9];
  for (const p of points) {
    log(`\nat ${p.stored} stored contents (${p.after} after its POST phase):`);
    log(line(['', 'rate/s', 'p50 ms', 'p99 ms', 'failed'], w));
    for (const [op, gwName, s3Name] of pairs) {
      const g = p.rows[gwName];
      const d = p.rows[s3Name];
      log(line([gwName, fmt(g.rate, 1), fmt(g.p50), fmt(g.p99), g.errors], w));
      log(line([s3Name, fmt(d.rate, 1), fmt(d.p50), fmt(d.p99), d.errors], w));
      log(line([`${op} gateway / S3`, ratio(g.rate, d.rate), ratio(g.p50, d.p50), ratio(g.p99, d.p99), ''], w));
    }
  }
  if (points.length > 1) {
    const [a, b] = [points[0], points[points.length - 1]];
    log(`\nat ${b.stored} vs at ${a.stored} stored contents (ratio later / earlier):`);
    log(line(['', 'rate', 'p50', 'p99'], w));
    for (const [, gwName, s3Name] of pairs) {
      for (const name of [gwName, s3Name])
        log(
          line(
            [
              name,
              ratio(b.rows[name].rate, a.rows[name].rate),
              ratio(b.rows[name].p50, a.rows[name].p50),
              ratio(b.rows[name].p99, a.rows[name].p99),
            ],
            w,
          ),
        );
    }
  } else {
    log(`\n(--contents ${CONTENTS} is the first point: no later point to compare with)`);
  }

  if (spanBytes !== undefined) {
    log(
      `\ntracing: CPU-ms per request of the gateway + the content-service, untraced stack against the one tracing every request (${(spanBytes / 1e6).toFixed(1)} MB of span JSON received):`,
    );
    const tw = [22, 9, 9, 9, 9, 9];
    log(line(['', 'off rate/s', 'on rate/s', 'off CPU', 'on CPU', 'on / off'], tw));
    const both = (r) => r.cpu.gateway + r.cpu.content;
    for (const p of points)
      for (const [op, gwName] of pairs) {
        const [off, on] = [p.rows[gwName], p.traced[op]];
        log(
          line(
            [
              `${op} @${p.stored}`,
              fmt(off.rate, 1),
              fmt(on.rate, 1),
              fmt(both(off)),
              fmt(both(on)),
              ratio(both(on), both(off)),
            ],
            tw,
          ),
        );
      }
    log(
      `\nthe same at one load: both stacks sent ${EQUAL_LOAD_SHARE * 100} % of the lower of their rates above, ${EQUAL_ROUNDS} alternating rounds of ${EQUAL_SECONDS} s, medians:`,
    );
    const ew = [22, 9, 9, 9, 9, 9];
    log(line(['', 'rate/s', 'off CPU', 'on CPU', 'on / off', 'spread'], ew));
    for (const p of points)
      for (const [op] of pairs) {
        const e = p.equal[op];
        log(
          line(
            [
              `${op} @${p.stored}`,
              e.rate,
              fmt(e.off.cpu),
              fmt(e.on.cpu),
              ratio(e.on.cpu, e.off.cpu),
              `${(e.spread * 100).toFixed(0)} %`,
            ],
            ew,
          ),
        );
      }
  }

  const [few, many] = Object.keys(unfinishedRows).map(Number);
  log(`\nPUT of a 10 KiB chunk (a staged piece), 10 in flight, each on its own upload:`);
  log(line(['', 'rate/s', 'p50 ms', 'p99 ms', 'failed'], w));
  for (const held of [few, many]) {
    const r = unfinishedRows[held];
    log(line([`${held} unfinished`, fmt(r.rate, 1), fmt(r.p50), fmt(r.p99), r.errors], w));
  }
  const [a1, b1] = [unfinishedRows[few], unfinishedRows[many]];
  log(line([`${many} / ${few}`, ratio(b1.rate, a1.rate), ratio(b1.p50, a1.p50), ratio(b1.p99, a1.p99), ''], w));

  const sw = [34, 9, 9, 9, 9, 12];
  for (const p of signInPoints) {
    log(
      `\nsign-in at ${USERS} users and ${p.sessions} sessions registered, ${SIGNIN_CONCURRENCY} in flight, ${SECONDS} s each:`,
    );
    log(line(['', 'rate/s', 'p50 ms', 'p99 ms', 'failed', 'db CPU ms'], sw));
    for (const r of p.rows)
      log(
        line([r.label.replace(/ @\d+$/, ''), fmt(r.rate, 1), fmt(r.p50), fmt(r.p99), r.errors, fmt(r.cpu.mongo)], sw),
      );
  }
  if (signInPoints.length > 1) {
    const [a, b] = [signInPoints[0], signInPoints[signInPoints.length - 1]];
    log(`\nat ${b.sessions} vs at ${a.sessions} sessions (ratio later / earlier):`);
    log(line(['', 'rate', 'p50', 'p99'], sw));
    a.rows.forEach((ra, i) => {
      const rb = b.rows[i];
      log(
        line(
          [ra.label.replace(/ @\d+$/, ''), ratio(rb.rate, ra.rate), ratio(rb.p50, ra.p50), ratio(rb.p99, ra.p99)],
          sw,
        ),
      );
    });
  }

  const cw = [36, ...names.map((n) => Math.max(8, n.length))];
  log('\nCPU-ms per request, by process (seeding: per stored content):');
  log(line(['', ...names], cw));
  log(line([`seeding POST (${seeding.contents})`, ...names.map((n) => fmt(seeding.cpu[n] / seeding.contents, 3))], cw));
  for (const r of rows) log(line([r.label, ...names.map((n) => fmt(r.cpu[n], 3))], cw));
  log(line(['idle before the run, ms per s', ...names.map((n) => fmt(idle[n], 1))], cw));
  log(`processes: ${names.map((n) => `${n} = ${processes[n].label}`).join('; ')}`);
  log(
    'the S3, MongoDB-compatible and Redis servers are shared with anything else on this machine: their figures include its load',
  );
  const failed = rows.filter((r) => r.errors);
  if (failed.length)
    log(`FAILED requests in: ${failed.map((r) => `${r.label} (${r.errors}, first: ${r.firstError})`).join('; ')}`);
}

main().then(
  () => process.exit(0),
  (error) => {
    process.stderr.write(`bench scale: ${error.stack || error}\n`);
    process.exit(1);
  },
);
