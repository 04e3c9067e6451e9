// What tracing costs: two stacks in one run, one with tracing off (the default) and one with every
// request traced (OTEL_TRACES_SAMPLER=always_on, spans sent as OTLP/HTTP JSON to a receiver in this
// process that reads and drops them), measured in alternating rounds on the same small requests.
//   pnpm bench tracing [--seconds 6] [--concurrency 16] [--rounds 3] [--rate N] [--async-context-frame]
// By default each stack is driven as fast as it answers (closed loop, `concurrency` in flight), so a
// slower stack is also measured at a lower rate, where a request shares less of the event loop's
// work with others and costs more CPU. With --rate N, every stack gets the same N requests per
// second (open loop, at most `concurrency` in flight; a request that would pass that is counted as
// missed), so that CPU per request is compared at equal load.
// With --async-context-frame, a third stack traces every request too, its services started with
// Node.js's --experimental-async-context-frame (AsyncLocalStorage without async hooks, the default
// from Node.js 24), measured in the same rounds.
// For each stack and operation (one-shot POST of 10 KiB, GET and HEAD of a stored one, all by
// Bearer token through the gateway): requests per second and the CPU time the gateway and the
// content-service spent per request (utime + stime, /proc/<pid>/stat), the median of the rounds,
// and the spread of the rounds of the untraced stack (the run's noise).
const http = require('node:http');
const { randomBytes, randomUUID } = require('node:crypto');
const { DevKeys } = require('@cp/credentials');
const { benchArgs, cpuMs, ensureBackingServers, request, startStack } = require('./_support');
const { purgeStackData } = require('../tools/devstack/purge');

const args = benchArgs();
const seconds = Number(args.seconds ?? 6);
const concurrency = Number(args.concurrency ?? 16);
const rounds = Number(args.rounds ?? 3);
const rate = args.rate === undefined ? undefined : Number(args.rate);
if (rate !== undefined && !(rate > 0)) throw new Error('--rate takes a number of requests per second');
const nodeOptions = 'async-context-frame' in args ? '--experimental-async-context-frame' : undefined;
const SIZE = 10 * 1024;

async function sink() {
  let bytes = 0;
  const server = http.createServer((req, res) => {
    req.on('data', (c) => (bytes += c.length));
    req.on('end', () => res.end('{}'));
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${server.address().port}`, bytes: () => bytes, close: () => server.close() };
}

async function measure(stack, op) {
  const pids = stack.services.filter((s) => s.name === 'gateway' || s.name === 'content-service').map((s) => s.pid);
  const cpu0 = pids.reduce((n, p) => n + cpuMs(p), 0);
  const end = Date.now() + seconds * 1000;
  let done = 0;
  const worker = async () => {
    while (Date.now() < end) {
      const res = await op();
      if (res.status >= 300) throw new Error(`answered ${res.status}`);
      done++;
    }
  };
  let missed = 0;
  // One request every 1/rate s from the start, whatever came back; catching up after a late timer.
  const paced = async () => {
    const inFlight = new Set();
    let failure;
    const interval = 1000 / rate;
    for (let next = performance.now(); Date.now() < end; next += interval) {
      const wait = next - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      if (inFlight.size >= concurrency) {
        missed++;
        continue;
      }
      const sent = op().then((res) => {
        if (res.status >= 300) throw new Error(`answered ${res.status}`);
        done++;
      });
      inFlight.add(sent);
      sent.then(
        () => inFlight.delete(sent),
        (error) => {
          failure ??= error;
          inFlight.delete(sent);
        },
      );
      if (failure) break;
    }
    await Promise.all(inFlight);
    if (failure) throw failure;
  };
  const started = performance.now();
  if (rate) await paced();
  else await Promise.all(Array.from({ length: concurrency }, worker));
  const elapsed = (performance.now() - started) / 1000;
  return { rps: done / elapsed, missed, cpuPerRequest: (pids.reduce((n, p) => n + cpuMs(p), 0) - cpu0) / done };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main() {
  ensureBackingServers();
  const receiver = await sink();
  const prefix = `benchtr${Date.now().toString(36)}`;
  const tracedEnv = { LOG_LEVEL: 'warn', OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_TRACES_SAMPLER: 'always_on' };
  const stacks = {
    off: await startStack({ prefix: `${prefix}off`, env: { LOG_LEVEL: 'warn' } }),
    traced: await startStack({ prefix: `${prefix}on`, env: tracedEnv }),
  };
  if (nodeOptions)
    stacks.flags = await startStack({ prefix: `${prefix}fl`, env: { ...tracedEnv, NODE_OPTIONS: nodeOptions } });
  try {
    const owner = randomUUID();
    const token = await new DevKeys(stacks.off.keysDir).mint({ owners: [owner] });
    const auth = { authorization: `Bearer ${token}` };
    const body = randomBytes(SIZE);
    const ids = {};
    for (const [name, stack] of Object.entries(stacks)) {
      const res = await request('POST', `${stack.gatewayUrl}/v1/${owner}/contents`, auth, body, { keep: true });
      ids[name] = JSON.parse(res.body.toString()).id;
    }
    const ops = {
      'POST 10 KiB': (s) => () => request('POST', `${s.gatewayUrl}/v1/${owner}/contents`, auth, body),
      GET: (s, n) => () => request('GET', `${s.gatewayUrl}/v1/${owner}/contents/${ids[n]}`, auth),
      HEAD: (s, n) => () => request('HEAD', `${s.gatewayUrl}/v1/${owner}/contents/${ids[n]}`, auth),
    };
    // One round first on every stack, not counted: JIT compilation, connection pools and caches
    // warm up in it (it made the untraced rounds' spread 67-83 % when it was counted).
    for (const make of Object.values(ops))
      for (const name of Object.keys(stacks)) await measure(stacks[name], make(stacks[name], name));
    const results = {};
    for (let round = 0; round < rounds; round++)
      for (const [opName, make] of Object.entries(ops))
        // Alternating which goes first, so that neither always meets a warmer machine.
        for (const name of round % 2 ? Object.keys(stacks).reverse() : Object.keys(stacks)) {
          const r = await measure(stacks[name], make(stacks[name], name));
          ((results[opName] ??= {})[name] ??= []).push(r);
        }
    const load = rate ? `${rate} requests/s each (at most ${concurrency} in flight)` : `${concurrency} in flight`;
    console.log(
      `tracing: ${rounds} rounds of ${seconds} s at ${load}, after one not counted; CPU = gateway + content-service per request`,
    );
    const missed = Object.values(results)
      .flatMap((byStack) => Object.values(byStack).flat())
      .reduce((n, r) => n + r.missed, 0);
    if (missed) console.log(`requests missed (${concurrency} already in flight): ${missed}`);
    const extra = stacks.flags ? ` | traced with ${nodeOptions}: req/s  CPU ms, /off` : '';
    console.log(
      `operation     | off: req/s  CPU ms | traced: req/s  CPU ms | CPU traced/off | off rounds CPU spread${extra}`,
    );
    for (const [opName, byStack] of Object.entries(results)) {
      const cpu = (name) => median(byStack[name].map((r) => r.cpuPerRequest));
      const rps = (name) => median(byStack[name].map((r) => r.rps));
      const off = byStack.off.map((r) => r.cpuPerRequest);
      const spread = (Math.max(...off) - Math.min(...off)) / median(off);
      const flags = stacks.flags
        ? ` | ${rps('flags').toFixed(0).padStart(6)} ${cpu('flags').toFixed(3).padStart(7)}, ${(cpu('flags') / cpu('off')).toFixed(2)}`
        : '';
      console.log(
        `${opName.padEnd(13)} | ${rps('off').toFixed(0).padStart(10)} ${cpu('off').toFixed(3).padStart(7)} | ` +
          `${rps('traced').toFixed(0).padStart(13)} ${cpu('traced').toFixed(3).padStart(7)} | ` +
          `${(cpu('traced') / cpu('off')).toFixed(2).padStart(14)} | ${(spread * 100).toFixed(0)} %${flags}`,
      );
    }
    console.log(`spans sent: ${(receiver.bytes() / 1e6).toFixed(1)} MB of OTLP JSON`);
  } finally {
    for (const stack of Object.values(stacks)) {
      await stack.stop();
      await purgeStackData(stack.prefix, stack.backing).catch(() => undefined);
    }
    receiver.close();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
