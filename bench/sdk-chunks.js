// 1 MiB chunks sent the way the C# SDK sends them: a POST of the first MiB, then a PUT of each next
// MiB once the previous one answered; and the same with 8 chunks in flight. MB/s, per-chunk p50/p99,
// and where each chunk's time goes, read from the content-service's Server-Timing header: gateway
// (and loopback), auth, record lookup, lock wait, bookkeeping commits, the staging PutObject,
// assembly and completion. The baseline, in the same run: sequential 1 MiB PutObjects straight to
// the S3 server from this process. The floor of the path's shape, also in the same run: the same
// sequential MiBs through a bare Node.js proxy into a bare receiver that streams each into a
// PutObject (bench/_floor.js): two Node.js hops and S3, with no checks and no bookkeeping. And the
// floor of an unaligned chunk: the same hops, with the receiver doing the least a chunk that is not
// a whole part needs (stage it, record it with one database insert, assemble each part's staged
// chunks into an UploadPart off the request path, wait for them and complete on the last chunk).
//   pnpm bench sdk-chunks [--mib 256] [--rounds 3]
const { randomBytes, randomUUID } = require('node:crypto');
const { CreateBucketCommand, PutObjectCommand } = require('@aws-sdk/client-s3');
const { DevKeys } = require('@cp/credentials');
const {
  MiB,
  floorProcess,
  ensureBackingServers,
  inFlight,
  startStack,
  request,
  s3Client,
  benchArgs,
} = require('./_support');
const { purgeStackData } = require('../tools/devstack/purge');

const args = benchArgs();
const CHUNKS = Number(args.mib ?? 256);
const ROUNDS = Number(args.rounds ?? 3);
/** The services' grid part, in MiB. */
const PART_MIB = 64;
const STAGES = ['auth', 'record', 'lock', 'commit', 'stage', 'part', 'assembly', 'complete'];

/** `name;dur=ms, ...` → { name: ms }. */
function serverTiming(value) {
  const out = {};
  for (const item of String(value ?? '').split(',')) {
    const m = /^\s*([\w-]+)\s*;\s*dur=([\d.]+)/.exec(item);
    if (m) out[m[1]] = Number(m[2]);
  }
  return out;
}

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/** One content of CHUNKS MiB through the gateway, `parallel` chunks in flight; per-chunk latencies and stage times. */
async function upload(api, auth, data, parallel) {
  const total = CHUNKS * MiB;
  const samples = [];
  const send = async (method, url, i) => {
    const t = performance.now();
    const res = await request(
      method,
      url,
      { ...auth, 'content-range': `bytes ${i * MiB}-${(i + 1) * MiB - 1}/${total}` },
      data[i % data.length],
      {
        keep: true,
      },
    );
    const ms = performance.now() - t;
    if (res.status >= 300) throw new Error(`${method} chunk ${i} answered ${res.status}: ${res.body}`);
    samples.push({ ms, server: serverTiming(res.headers['server-timing']) });
    return res;
  };
  const started = performance.now();
  const first = await send('POST', api, 0);
  const { id } = JSON.parse(first.body);
  const statuses = await inFlight(
    parallel,
    Array.from({ length: CHUNKS - 1 }, (_, i) => async () => (await send('PUT', `${api}/${id}`, i + 1)).status),
  );
  const seconds = (performance.now() - started) / 1000;
  if (!statuses.includes(201)) throw new Error('no chunk completed the content');
  const head = await request('HEAD', `${api}/${id}`, auth);
  if (head.headers['x-upload-state'] !== 'ready' || Number(head.headers['content-length']) !== total)
    throw new Error('the content did not end ready');
  return { seconds, samples };
}

/** Sends CHUNKS chunks one after another (`send(i)`), timing each. */
async function timedSequential(send) {
  const samples = [];
  const started = performance.now();
  for (let i = 0; i < CHUNKS; i++) {
    const t = performance.now();
    await send(i);
    samples.push({ ms: performance.now() - t, server: {} });
  }
  return { seconds: (performance.now() - started) / 1000, samples };
}

/** CHUNKS sequential 1 MiB PutObjects straight to the S3 server. */
function s3Sequential(s3, Bucket, data) {
  return timedSequential((i) =>
    s3.send(new PutObjectCommand({ Bucket, Key: `seq/${i}`, Body: data[i % data.length], ContentLength: MiB })),
  );
}

/** One content of CHUNKS sequential 1 MiB PUTs through the bare proxy into the bare receiver's staging floor. */
async function stagingFloorSequential(proxyUrl, Bucket, data) {
  const key = `staged-floor/${randomUUID()}`;
  const open = await request(
    'POST',
    `${proxyUrl}/chunks?${new URLSearchParams({ bucket: Bucket, key, chunk: MiB, perPart: PART_MIB, of: CHUNKS })}`,
    {},
    '',
    {
      keep: true,
    },
  );
  if (open.status !== 201) throw new Error(`staging floor POST answered ${open.status}: ${open.body}`);
  return timedSequential(async (i) => {
    const res = await request(
      'PUT',
      `${proxyUrl}/chunks/${i}?${new URLSearchParams({ key })}`,
      {},
      data[i % data.length],
      { keep: true },
    );
    if (res.status !== (i === CHUNKS - 1 ? 201 : 204))
      throw new Error(`staging floor PUT ${i} answered ${res.status}: ${res.body}`);
  });
}

/** CHUNKS sequential 1 MiB PUTs through the bare proxy into the bare receiver's PutObject. */
function floorSequential(proxyUrl, Bucket, data) {
  return timedSequential(async (i) => {
    const res = await request(
      'PUT',
      `${proxyUrl}/object?${new URLSearchParams({ bucket: Bucket, key: `floor/${i}` })}`,
      {},
      data[i % data.length],
      {
        keep: true,
      },
    );
    if (res.status !== 200) throw new Error(`floor PUT answered ${res.status}: ${res.body}`);
  });
}

function summary(run) {
  const sorted = run.samples.map((s) => s.ms).sort((a, b) => a - b);
  return { mbps: (CHUNKS * MiB) / 1e6 / run.seconds, p50: percentile(sorted, 50), p99: percentile(sorted, 99) };
}

/** Mean ms per chunk in each stage; `gateway` is what the client waited beyond the content-service's own total. */
function breakdown(run) {
  const n = run.samples.length;
  const sum = (f) => run.samples.reduce((acc, s) => acc + f(s), 0) / n;
  const out = { client: sum((s) => s.ms), gateway: sum((s) => s.ms - (s.server.total ?? 0)) };
  for (const stage of STAGES) out[stage] = sum((s) => s.server[stage] ?? 0);
  out.other = sum((s) => (s.server.total ?? 0) - STAGES.reduce((acc, st) => acc + (s.server[st] ?? 0), 0));
  return out;
}

async function main() {
  ensureBackingServers();
  const stack = await startStack({ prefix: `benchs${Date.now().toString(36)}`, env: { LOG_LEVEL: 'warn' } });
  const s3 = s3Client();
  const receiver = await floorProcess(['receiver'], undefined, { FLOOR_DATABASE: `${stack.prefix}_floor` });
  const proxy = await floorProcess(['proxy', receiver.url]);
  try {
    const data = Array.from({ length: 16 }, () => randomBytes(MiB));
    const owner = randomUUID();
    const auth = {
      authorization: `Bearer ${await new DevKeys(stack.keysDir).mint({ owners: [owner], ttlSeconds: 3600 })}`,
    };
    const api = `${stack.gatewayUrl}/v1/${owner}/contents`;
    const Bucket = `${stack.prefix}-reference`;
    await s3.send(new CreateBucketCommand({ Bucket }));
    const phases = {
      s3: () => s3Sequential(s3, Bucket, data),
      floor: () => floorSequential(proxy.url, Bucket, data),
      stagingFloor: () => stagingFloorSequential(proxy.url, Bucket, data),
      sequential: () => upload(api, auth, data, 1),
      inFlight8: () => upload(api, auth, data, 8),
    };
    const best = {};
    for (let round = 0; round < ROUNDS; round++) {
      const names = Object.keys(phases);
      for (const name of round % 2 === 0 ? names : names.reverse()) {
        const run = await phases[name]();
        if (!best[name] || run.seconds < best[name].seconds) best[name] = run;
      }
    }
    const line = (label, run) => {
      const s = summary(run);
      return `${label.padEnd(44)} ${s.mbps.toFixed(1).padStart(6)} MB/s   p50 ${s.p50.toFixed(1).padStart(6)} ms   p99 ${s.p99.toFixed(1).padStart(6)} ms`;
    };
    console.log(`\n${CHUNKS} × 1 MiB, best of ${ROUNDS} round(s)`);
    console.log(line('S3 server alone: sequential PutObjects', best.s3));
    console.log(line('floor: bare proxy + bare receiver, sequential', best.floor));
    console.log(line('floor of unaligned chunks: staged, 1 insert', best.stagingFloor));
    console.log(line('through the gateway: sequential (C# SDK)', best.sequential));
    console.log(line('through the gateway: 8 in flight', best.inFlight8));
    const ratio = summary(best.sequential).mbps / summary(best.s3).mbps;
    console.log(`ratio sequential chunks / sequential PutObjects: ${ratio.toFixed(2)} (target ≥ 0.5)`);
    const floorRatio = summary(best.floor).mbps / summary(best.s3).mbps;
    console.log(
      `ratio floor / sequential PutObjects: ${floorRatio.toFixed(2)} (two bare Node.js hops, no bookkeeping)`,
    );
    const stagingRatio = summary(best.stagingFloor).mbps / summary(best.s3).mbps;
    console.log(
      `ratio staging floor / sequential PutObjects: ${stagingRatio.toFixed(2)} (the least an unaligned chunk needs)`,
    );
    console.log(`ratio sequential chunks / staging floor: ${(ratio / stagingRatio).toFixed(2)}`);
    console.log(
      '\nmean ms per chunk, by stage (Server-Timing; gateway = client wait beyond the content-service total)',
    );
    const rows = { sequential: breakdown(best.sequential), '8 in flight': breakdown(best.inFlight8) };
    const stages = ['client', 'gateway', ...STAGES, 'other'];
    console.log(
      `${'stage'.padEnd(12)}${Object.keys(rows)
        .map((k) => k.padStart(14))
        .join('')}`,
    );
    for (const st of stages)
      console.log(
        `${st.padEnd(12)}${Object.values(rows)
          .map((r) => r[st].toFixed(2).padStart(14))
          .join('')}`,
      );
  } finally {
    proxy.stop();
    receiver.stop();
    s3.destroy();
    await stack.stop();
    await purgeStackData(stack.prefix, stack.backing);
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
