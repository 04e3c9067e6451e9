#!/usr/bin/env node
// `pnpm soak --minutes N --seed S`: a chaos soak of the whole system on ports and data of its own.
// Mixed traffic through the gateway (uploads of every shape, downloads checked by SHA-256, deletions,
// certificate sign-ins, refreshes, webhook deliveries) while a fault is injected every 8–15 s; then
// a settle, a read-back of every acknowledged content, the webhook events checked, and a table of
// figures. Exits 1 on any finding (docs/operations.md, "What survives what"), 2 on bad arguments.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { randomUUID, randomInt } = require('node:crypto');
const { ROOT } = require('../devstack/stack');
const { Prng } = require('./Prng');
const { SoakHttp, json, errorIdOf } = require('./SoakHttp');
const { SoakSystem } = require('./SoakSystem');
const { Ledger } = require('./Ledger');
const { ContentBytes } = require('./ContentBytes');
const { uploaderLoop } = require('./Uploader');
const { downloaderLoop, deleterLoop, checkWhole, checkGone } = require('./Downloader');
const { registerUsers, signInLoop } = require('./SignIns');
const { WebhookSink } = require('./WebhookSink');
const { FaultInjector } = require('./FaultInjector');
const { summarize, print } = require('./Report');

const USAGE = `usage: pnpm soak [--minutes 3] [--seed S] [--port-base 19400] [--uploaders 4] [--downloaders 2]
                 [--keep-bytes 2147483648] [--log-level info] [--keep-logs] [--keep-data]`;

function parseArgs(argv) {
  const o = {
    minutes: 3,
    seed: String(randomInt(1, 2 ** 31)),
    portBase: 19400,
    uploaders: 4,
    downloaders: 2,
    keepBytes: 2 * 1024 ** 3,
    logLevel: 'info',
    keepLogs: false,
    keepData: false,
  };
  const names = {
    '--minutes': 'minutes',
    '--seed': 'seed',
    '--port-base': 'portBase',
    '--uploaders': 'uploaders',
    '--downloaders': 'downloaders',
    '--keep-bytes': 'keepBytes',
    '--log-level': 'logLevel',
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--keep-logs') o.keepLogs = true;
    else if (a === '--keep-data') o.keepData = true;
    else if (names[a] && i + 1 < argv.length) o[names[a]] = argv[++i];
    else throw new Error(`unknown argument ${a}`);
  }
  for (const k of ['minutes', 'portBase', 'uploaders', 'downloaders', 'keepBytes']) {
    o[k] = Number(o[k]);
    if (!Number.isFinite(o[k]) || o[k] <= 0) throw new Error(`--${k} must be a positive number`);
  }
  if (o.portBase + 10 > 65535) throw new Error('--port-base leaves no room for eleven ports');
  return o;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Resolves when `promise` does or after `ms`, whichever comes first (true when it settled). */
async function within(promise, ms) {
  let timer;
  const settled = await Promise.race([
    promise.then(
      () => true,
      () => true,
    ),
    new Promise((r) => (timer = setTimeout(() => r(false), ms))),
  ]);
  clearTimeout(timer);
  return settled;
}

async function main() {
  let opts;
  try {
    opts = parseArgs(process.argv.slice(2));
  } catch (error) {
    process.stderr.write(`soak: ${error.message}\n${USAGE}\n`);
    return 2;
  }
  const out = process.stdout;
  out.write(`soak: seed ${opts.seed}\n`);
  out.write(
    `soak: ${opts.minutes} min of traffic, ${opts.uploaders} uploaders, ${opts.downloaders} downloaders, ports ${opts.portBase}–${opts.portBase + 10}\n`,
  );

  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cp-soak-'));
  const logDir = path.join(ROOT, '.local', 'soak', `${stamp}-seed-${opts.seed}`);
  fs.mkdirSync(logDir, { recursive: true });
  const journalStream = fs.createWriteStream(path.join(logDir, 'journal.jsonl'));
  const started = performance.now();
  const now = () => (performance.now() - started) / 1000;
  const journal = (entry) => journalStream.write(`${JSON.stringify({ t: Number(now().toFixed(3)), ...entry })}\n`);

  const unexpectedExits = [];
  const system = new SoakSystem({
    portBase: opts.portBase,
    stateDir,
    logDir,
    onUnexpectedExit: (e) => {
      unexpectedExits.push({ ...e, at: now() });
      journal({ kind: 'unexpectedExit', ...e });
      out.write(`soak: ${e.name} (pid ${e.pid}) exited by itself (${e.signal ?? e.code}); started again\n`);
    },
  });
  const sink = new WebhookSink();
  let interrupted = false;
  let cleaned = false;
  const cleanup = async () => {
    if (cleaned) return;
    cleaned = true;
    await within(system.stop(), 20_000);
    system.killNow();
    await sink.stop().catch(() => {});
    if (!opts.keepData) fs.rmSync(stateDir, { recursive: true, force: true });
  };
  const onSignal = (signal) => {
    if (interrupted) return;
    interrupted = true;
    out.write(`\nsoak: ${signal}: stopping everything\n`);
    // The main flow notices and cleans up; this bounds it.
    setTimeout(() => {
      system.killNow();
      if (!opts.keepData) fs.rmSync(stateDir, { recursive: true, force: true });
      process.exit(130);
    }, 45_000).unref();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  process.on('exit', () => system.killNow());

  // Nothing runs longer than the traffic plus every bounded phase after it.
  const watchdog = setTimeout(
    () => {
      out.write('soak: the run took longer than its bound; stopping\n');
      onSignal('timeout');
    },
    (opts.minutes * 60 + 900) * 1000,
  );
  watchdog.unref();

  try {
    return await soak({
      opts,
      out,
      system,
      sink,
      journal,
      now,
      logDir,
      unexpectedExits,
      isInterrupted: () => interrupted,
    });
  } catch (error) {
    out.write(`soak: ${interrupted ? 'interrupted' : `error: ${error.stack || error}`}\n`);
    return interrupted ? 130 : 1;
  } finally {
    await cleanup();
    clearTimeout(watchdog);
    await new Promise((r) => journalStream.end(r));
    out.write(`soak: logs in ${path.relative(process.cwd(), logDir)}\n`);
  }
}

/** The newest modification time under the services' and libraries' build output (a rebuild during a run shows). */
function newestBuild() {
  let newest = 0;
  const walk = (dir) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else newest = Math.max(newest, fs.statSync(p).mtimeMs);
    }
  };
  for (const top of ['services', 'libs'])
    for (const name of fs.readdirSync(path.join(ROOT, top))) {
      const dist = path.join(ROOT, top, name, 'dist');
      if (fs.existsSync(dist)) walk(dist);
    }
  return newest;
}

async function soak({ opts, out, system, sink, journal, now, logDir, unexpectedExits, isInterrupted }) {
  const buildAtStart = newestBuild();
  const prng = new Prng(opts.seed);
  const http = new SoakHttp({ journal, now });
  const ledger = new Ledger();
  const scale = Math.min(1, Math.max(0.3, opts.minutes / 10));
  out.write(`soak: starting the backing servers and the services (logs: ${path.relative(process.cwd(), logDir)})\n`);
  await system.start({
    logLevel: opts.logLevel,
    // Webhook retries and the check of unpublished events come sooner than in production, so that
    // the settle sees every event; the code paths are the same.
    contentEnv: {
      WEBHOOK_POLL_SECONDS: '1',
      WEBHOOK_RETRY_FIRST_SECONDS: '2',
      WEBHOOK_RETRY_MAX_SECONDS: '10',
      WEBHOOK_CHECK_SECONDS: '10',
    },
  });
  if (isInterrupted()) throw new Error('interrupted');
  const gatewayUrl = system.gatewayUrl;
  const { DevKeys } = require('@cp/credentials');
  const keys = new DevKeys(system.stack.keysDir);
  const ttlSeconds = Math.ceil(opts.minutes * 60 + 3600);
  const newOwner = async () => {
    const owner = randomUUID();
    return { owner, token: await keys.mint({ owners: [owner], ttlSeconds }) };
  };

  let trafficUntil = Infinity;
  let abortFlag = false;
  const stats = {
    uploads: {},
    resumes: 0,
    restartsTold: 0,
    lateCompletions: 0,
    downloads: { whole: 0, ranges: 0, heads: 0, gaveUp: 0 },
    readBackOk: 0,
    readBeforeDelete: 0,
    deleted: 0,
    deletedUnfinished: 0,
    goneChecked: 0,
    signIns: { ok: 0, refreshes: 0, sidCalls: 0, failed: [] },
    unexpected: [],
  };
  const ctx = {
    seed: opts.seed,
    prng,
    http,
    ledger,
    stats,
    journal,
    now,
    scale,
    gatewayUrl,
    keepBytes: opts.keepBytes,
    trafficOn: () => now() < trafficUntil && !isInterrupted(),
    aborted: () => abortFlag || isInterrupted(),
    unexpected: (who, what, r) => {
      const e = {
        at: r.at,
        worker: who.worker,
        id: who.id,
        owner: who.owner,
        what,
        status: r.status,
        error: r.error?.message,
        errorId: errorIdOf(r),
        requestId: r.headers?.['x-request-id'],
        body: r.body?.toString('utf8', 0, 300),
      };
      stats.unexpected.push(e);
      journal({ kind: 'unexpected', ...e, log: who.log });
    },
  };

  // Owners, their webhooks, the sign-in users and the probe's fixtures.
  const hookUrl = await sink.start();
  ctx.owners = [];
  for (let i = 0; i < opts.uploaders; i++) ctx.owners.push(await newOwner());
  ctx.deleterOwner = await newOwner();
  const adminEnv = {
    ...process.env,
    ...system.backingEnv(),
    MONGODB_DATABASE: system.stack.authDatabase,
    AUDIT_LOG: system.stack.auditFile,
  };
  const registered = registerUsers({ dir: path.join(system.stateDir, 'pki'), count: 4, adminEnv });
  for (const u of registered.users) u.token = await keys.mint({ owners: [u.owner], ttlSeconds });
  const probeUser = registered.users.pop();
  ctx.signIn = registered;
  const hookOwners = [...ctx.owners, ctx.deleterOwner, ...registered.users];
  for (const o of hookOwners) {
    const r = await http.send({
      method: 'POST',
      url: `${gatewayUrl}/v1/${o.owner}/webhooks`,
      headers: { authorization: `Bearer ${o.token}`, 'content-type': 'application/json' },
      body: Buffer.from(JSON.stringify({ url: hookUrl, events: ['content.completed', 'content.deleted'] })),
    });
    if (r.status !== 201) throw new Error(`a webhook registration answered ${r.status}: ${r.body}`);
    sink.addSecret(o.owner, json(r).secret);
  }
  const probeOwner = await newOwner();
  const probeBytes = new ContentBytes(`${opts.seed}/probe`, 2048);
  const probeReady = await http.send({
    method: 'POST',
    url: `${gatewayUrl}/v1/${probeOwner.owner}/contents`,
    headers: { authorization: `Bearer ${probeOwner.token}` },
    body: probeBytes.range(0, 1023),
  });
  const probeUnfinished = await http.send({
    method: 'POST',
    url: `${gatewayUrl}/v1/${probeOwner.owner}/contents`,
    headers: { authorization: `Bearer ${probeOwner.token}`, 'content-range': 'bytes 0-1023/2048' },
    body: probeBytes.range(0, 1023),
  });
  if (probeReady.status !== 201 || probeUnfinished.status !== 201) throw new Error('the probe fixtures were refused');
  ctx.probe = {
    ...probeOwner,
    ready: { id: json(probeReady).id, sha256: new ContentBytes(`${opts.seed}/probe`, 1024).sha256() },
    unfinishedId: json(probeUnfinished).id,
    user: probeUser,
    apiKey: registered.apiKey,
  };
  const faults = new FaultInjector({ ctx, system });
  const firstProbe = await faults.probe();
  if (firstProbe.length) throw new Error(`the probe fails before any fault: ${firstProbe.join('; ')}`);

  // Traffic and faults.
  const trafficStart = now();
  trafficUntil = trafficStart + opts.minutes * 60;
  out.write(`soak: traffic for ${opts.minutes} min from ${trafficStart.toFixed(1)} s\n`);
  const progress = setInterval(() => {
    const f = faults.faults;
    out.write(
      `  ${now().toFixed(0).padStart(5)} s  acknowledged ${ledger.contents.size}, faults ${f.length}` +
        `${faults.current ? ` (now: ${faults.current.kind})` : ''}, violations ${ledger.violations.length + stats.unexpected.length}\n`,
    );
  }, 30_000);
  const workers = [
    ...ctx.owners.map((_, i) => uploaderLoop(ctx, i)),
    ...Array.from({ length: opts.downloaders }, (_, i) => downloaderLoop(ctx, i)),
    deleterLoop(ctx),
    signInLoop(ctx),
  ].map((p) =>
    p.catch((error) => {
      ledger.violation({ kind: 'wrongStatus', at: now(), detail: `a worker failed: ${error.stack || error}` });
    }),
  );
  const faulting = faults.run(() => now() < trafficUntil - 5 && !isInterrupted());
  await within(faulting, (trafficUntil - now() + 120) * 1000);
  while (now() < trafficUntil && !isInterrupted()) await sleep(250);
  const trafficEnd = now();

  // Settle: the uploads in flight finish (bounded: 60 s), then what is left gets 30 s of retries.
  out.write(`soak: traffic over at ${trafficEnd.toFixed(1)} s; settling\n`);
  if (!(await within(Promise.all(workers), 60_000))) {
    abortFlag = true;
    await within(Promise.all(workers), 35_000);
  }
  clearInterval(progress);
  if (isInterrupted()) throw new Error('interrupted');
  abortFlag = false;
  const pending = [...ledger.pending];
  const stuckDeadline = Date.now() + 30_000;
  const stuckTimer = setTimeout(() => (abortFlag = true), 30_000);
  await Promise.all(
    pending.map(async (run) => {
      await run.resume(10, stuckDeadline);
      if (run.completed) {
        run.acknowledge();
        stats.lateCompletions++;
      } else if (!run.lost)
        ledger.violation({
          kind: 'stuck',
          at: now(),
          id: run.id,
          owner: run.owner,
          size: run.plan.size,
          detail: `not completed within 30 s after the traffic (${run.plan.mode}, ${run.plan.ranges.length} ranges)`,
          log: run.log,
        });
    }),
  );
  clearTimeout(stuckTimer);
  abortFlag = false;
  const settleS = now() - trafficEnd;

  // Read back every acknowledged content; deleted ones must answer 404.
  out.write(`soak: reading back ${ledger.contents.size} acknowledged contents\n`);
  const readStart = now();
  const items = [...ledger.contents.values()];
  const readDeadline = setTimeout(() => (abortFlag = true), 300_000);
  let next = 0;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next < items.length && !isInterrupted()) {
        const c = items[next++];
        if (c.state === 'deleting') c.state = 'live';
        if (c.state === 'live') {
          const res = await checkWhole(ctx, c, 'read-back', { counted: false });
          if (res === 'ok') stats.readBackOk++;
          else if (res === 'failed' && c.state === 'live')
            ledger.violation({
              kind: 'unreadable',
              at: now(),
              id: c.id,
              owner: c.owner,
              detail: 'no answer at the read-back',
            });
        } else if (c.state === 'deleted') {
          if (await checkGone(ctx, c.owner, c.token, c.id, 'read-back', 'deleted content')) stats.goneChecked++;
        }
      }
    }),
  );
  for (const c of items.filter((x) => x.state === 'uncertain')) {
    const r = await http.send({
      method: 'HEAD',
      url: `${gatewayUrl}/v1/${c.owner}/contents/${c.id}`,
      headers: { authorization: `Bearer ${c.token}` },
    });
    if (r.status === 200) c.state = 'live';
    else if (r.status === 404) c.state = 'deleted';
  }
  for (const d of ledger.deletedUnfinished.values())
    if (await checkGone(ctx, d.owner, d.token, d.id, 'read-back', 'deleted unfinished upload')) stats.goneChecked++;
  clearTimeout(readDeadline);
  const readBackS = now() - readStart;

  // Webhook events: one per acknowledged completion and deletion, never two ids for one fact.
  const expected = [];
  for (const c of ledger.contents.values()) {
    if (!c.webhook) continue;
    expected.push(['content.completed', c.id, c]);
    if (c.state === 'deleted') expected.push(['content.deleted', c.id, c]);
  }
  for (const c of items.filter((x) => x.state === 'uncertain')) {
    const r = await http.send({
      method: 'HEAD',
      url: `${gatewayUrl}/v1/${c.owner}/contents/${c.id}`,
      headers: { authorization: `Bearer ${c.token}` },
    });
    if (r.status === 200) c.state = 'live';
    else if (r.status === 404) c.state = 'deleted';
  }
  for (const d of ledger.deletedUnfinished.values()) expected.push(['content.deleted', d.id, d]);
  // Uncertain deletions (no answer within the budget) may or may not have made an event.
  for (const c of ledger.contents.values()) if (c.state === 'uncertain') c.webhook = false;
  const missing = () => expected.filter(([type, id]) => sink.idsOf(type, id) === 0);
  const eventsDeadline = Date.now() + 90_000;
  while (missing().length && Date.now() < eventsDeadline && !isInterrupted()) await sleep(500);
  const expectedFacts = new Set(expected.map(([type, id]) => `${type} ${id}`));
  const expectations = {
    expected: expected.length,
    // Events of contents the soak never saw acknowledged (an answer lost with its content stored): not a finding.
    unknownFacts: [...sink.byFact.keys()].filter((fact) => !expectedFacts.has(fact)),
    lostEvents: missing().map(([type, id, c]) => ({
      type,
      id,
      owner: c.owner,
      ackAt: c.ackAt,
      deletedAt: c.deletedAt,
    })),
    doubledEvents: [...sink.byFact].filter(([, ids]) => ids.size > 1).map(([fact, ids]) => ({ fact, ids: [...ids] })),
    phantomEvents: [...ledger.deletedUnfinished.keys()]
      .filter((id) => sink.idsOf('content.completed', id) > 0)
      .map((id) => ({ fact: `content.completed ${id}`, detail: 'a deleted unfinished upload was reported completed' })),
  };

  // An event of a content the soak never saw acknowledged must still be of a fact that happened:
  // its content exists (or was deleted, with its own event).
  const tokens = new Map(hookOwners.map((o) => [o.owner, o.token]));
  for (const fact of expectations.unknownFacts) {
    const [type, id] = fact.split(' ');
    if (type !== 'content.completed' || sink.idsOf('content.deleted', id) > 0) continue;
    const owner = [...sink.events.values()].find((e) => e.content === id)?.owner;
    const r = await http.send({
      method: 'HEAD',
      url: `${gatewayUrl}/v1/${owner}/contents/${id}`,
      headers: { authorization: `Bearer ${tokens.get(owner)}` },
    });
    if (r.status !== 200 || r.headers['x-upload-state'] === 'uploading')
      expectations.phantomEvents.push({
        fact,
        detail: `reported completed, HEAD answers ${r.status} ${r.headers?.['x-upload-state'] ?? ''}`,
      });
  }

  const summary = summarize({
    ledger,
    stats,
    faults,
    http,
    sink,
    expectations,
    unexpectedExits,
    timing: { trafficS: trafficEnd - trafficStart, settleS, readBackS },
  });
  print(out, summary);
  const rebuilt = newestBuild();
  if (rebuilt > buildAtStart)
    out.write(
      `soak: WARNING: the build output changed during the run (at ${new Date(rebuilt).toISOString()}); ` +
        'services restarted after that ran other code than those started first\n',
    );
  const findings = {
    violations: ledger.violations,
    unexpected: stats.unexpected,
    http500Outside: summary.http500Outside,
    http500All: http.serverErrors.filter((e) => e.status === 500),
    signInFailures: stats.signIns.failed,
    lostEvents: expectations.lostEvents,
    doubledEvents: expectations.doubledEvents,
    phantomEvents: expectations.phantomEvents,
    eventsOfUnacknowledged: expectations.unknownFacts,
    unexpectedExits,
    requestsOutOfRetries: http.exhausted,
    faults: faults.faults,
  };
  fs.writeFileSync(path.join(logDir, 'findings.json'), JSON.stringify(findings, null, 2));
  if (summary.failed) printFindings(out, findings, summary);
  out.write(`soak: seed ${opts.seed}\n`);
  if (!summary.failed && !opts.keepLogs) fs.rmSync(logDir, { recursive: true, force: true });
  return summary.failed ? 1 : 0;
}

function printFindings(out, f, summary) {
  const show = (title, list, line) => {
    if (!list.length) return;
    out.write(`\n${title} (${list.length}):\n`);
    for (const x of list.slice(0, 15)) out.write(`  ${line(x)}\n`);
    if (list.length > 15) out.write(`  … and ${list.length - 15} more (findings.json)\n`);
  };
  const at = (t) => (t == null ? '?' : `${Number(t).toFixed(1)} s`);
  show(
    'violations',
    f.violations,
    (v) => `${v.kind} at ${at(v.at)}: ${v.id ?? ''} ${v.owner ?? ''} ${v.size ?? ''} ${v.detail}`,
  );
  show(
    'wrong statuses',
    f.unexpected,
    (u) =>
      `at ${at(u.at)} ${u.worker} ${u.what} ${u.id ?? ''}: ${u.status ?? u.error} ${u.errorId ?? ''} (request ${u.requestId})`,
  );
  show(
    'requests refused for 30 s after the faults',
    summary.stuckRequests,
    (e) =>
      `${at(e.from)}–${at(e.at)} ${e.worker} ${e.method} ${e.path} ${e.range ?? ''}: ${e.status ?? e.error} ` +
      `${e.errorId ?? ''} after ${e.attempts} attempts (last request ${e.requestId})`,
  );
  show(
    '500s outside a fault window',
    summary.http500Outside,
    (e) => `at ${at(e.at)} ${e.method} ${e.path} ${e.range ?? ''} ${e.errorId} (request ${e.requestId}, ${e.worker})`,
  );
  show(
    'sign-in failures outside faults',
    summary.signInFailuresOutside,
    (s) => `${at(s.from)}–${at(s.to)} ${s.step}: ${s.status ?? s.error} ${s.errorId ?? ''} ${s.detail}`,
  );
  show(
    'lost events',
    f.lostEvents,
    (e) => `${e.type} ${e.id} (acknowledged at ${at(e.ackAt)}${e.deletedAt ? `, deleted at ${at(e.deletedAt)}` : ''})`,
  );
  show('doubled events', f.doubledEvents, (e) => `${e.fact}: ${e.ids.join(', ')}`);
  show(
    'processes that exited by themselves',
    f.unexpectedExits,
    (e) => `${e.name} pid ${e.pid} at ${at(e.at)}: ${e.signal ?? e.code}`,
  );
  show(
    'slow or missing recoveries',
    [...summary.slow, ...summary.notRecovered],
    (x) =>
      `${x.kind} at ${at(x.start)}: ${x.recovery == null ? 'none' : `${x.recovery.toFixed(1)} s`} ${JSON.stringify(x.probeFailures?.slice(-1))}`,
  );
}

main().then(
  (code) => process.exit(code),
  (error) => {
    process.stderr.write(`soak: ${error.stack || error}\n`);
    process.exit(1);
  },
);
