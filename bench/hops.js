// What each hop of the data path costs, in CPU seconds per GiB, upload and download, against floors
// measured in the same run:
//   services: client -> gateway   -> content-service -> S3 server (+ database)
//   floors:   client -> bare proxy -> bare receiver  -> S3 server
// The bare proxy is http.request piped both ways; the bare receiver streams a PUT body into
// UploadPart and a ranged GetObject into its answer, with nothing else (bench/_floor.js). Each hop's
// ratio is its CPU-s/GiB over its floor's: gateway / bare proxy, content-service / bare receiver.
// 64 MiB parts (or 64 MiB ranges), 4 in flight. Phases alternate order over rounds; the lowest
// CPU of each process over the rounds is reported (the best of N runs), with the MB/s of that round.
//   pnpm bench hops [--gib 1] [--rounds 3] [--default-v8]
//   (CP_BENCH_PROFILE=<dir> also writes CPU profiles of the content-service and the gateway)
const fs = require('node:fs');
const { execFileSync } = require('node:child_process');
const { randomBytes, randomUUID } = require('node:crypto');
const {
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  DeleteObjectCommand,
  DeleteBucketCommand,
} = require('@aws-sdk/client-s3');
const { DevKeys } = require('@cp/credentials');
const { MiB, floorProcess, ensureBackingServers, inFlight, timed, mbps, startStack, request, s3Client, benchArgs } = require('./_support');
const { SERVICE_NODE_ARGS } = require('../scripts/stack');
const { purgeStackData } = require('../scripts/purge');

const args = benchArgs();
const GIB = Number(args.gib ?? 1);
const ROUNDS = Number(args.rounds ?? 3);
const P = 64 * MiB;
// The floors run on the services' V8 flags, so that a ratio measures the work of a hop rather than
// a runtime setting; --default-v8 runs them on V8's defaults instead.
const FLOOR_NODE_ARGS = 'default-v8' in args ? [] : SERVICE_NODE_ARGS;
const TOTAL = GIB * 1024 * MiB;
const PARTS = TOTAL / P;

const cpuSeconds = (pid) => {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) / 100; // utime + stime, in clock ticks of 1/100 s
};
const pidOf = (name) => Number(execFileSync('pgrep', ['-x', name]).toString().trim().split('\n')[0]);

/** Runs `fn` and returns its MB/s and the CPU seconds per GiB each process spent meanwhile. */
async function measure(pids, fn) {
  execFileSync('sync');
  const before = Object.fromEntries(Object.entries(pids).map(([n, p]) => [n, cpuSeconds(p)]));
  const t = await timed(fn);
  const cpu = Object.fromEntries(Object.entries(pids).map(([n, p]) => [n, (cpuSeconds(p) - before[n]) / GIB]));
  return { mbps: mbps(TOTAL, t.seconds), cpu };
}

(async () => {
  ensureBackingServers();
  const part = randomBytes(P);
  const s3 = s3Client();
  const Bucket = `bench-hops-${Date.now().toString(36)}`;
  await s3.send(new CreateBucketCommand({ Bucket }));
  const receiver = await floorProcess(['receiver'], FLOOR_NODE_ARGS);
  const proxy = await floorProcess(['proxy', receiver.url], FLOOR_NODE_ARGS);
  const stack = await startStack({ prefix: `hops${Date.now().toString(36)}`, env: { LOG_LEVEL: 'warn' } });
  const byName = Object.fromEntries(stack.services.map((s) => [s.name, s.pid]));
  const backing = { 's3 server': pidOf('versitygw'), database: pidOf('ferretdb') };
  const owner = randomUUID();
  const auth = { authorization: `Bearer ${await new DevKeys(stack.keysDir).mint({ owners: [owner] })}` };
  const api = `${stack.gatewayUrl}/v1/${owner}/contents`;
  const keys = [];
  let downloadId;
  let floorKey;

  const phases = {
    'floor upload': async () => {
      const Key = `floor-${keys.length}`;
      keys.push(Key);
      const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket, Key }));
      const etags = await inFlight(
        4,
        Array.from({ length: PARTS }, (_, k) => async () => {
          const q = new URLSearchParams({ bucket: Bucket, key: Key, upload: UploadId, n: String(k + 1) });
          const res = await request('PUT', `${proxy.url}/part?${q}`, {}, part, { keep: true });
          if (res.status !== 200) throw new Error(`floor PUT answered ${res.status}: ${res.body}`);
          return JSON.parse(res.body).etag;
        }),
      );
      await s3.send(
        new CompleteMultipartUploadCommand({ Bucket, Key, UploadId, MultipartUpload: { Parts: etags.map((ETag, k) => ({ ETag, PartNumber: k + 1 })) } }),
      );
      floorKey = Key;
    },
    'floor download': async () => {
      const q = new URLSearchParams({ bucket: Bucket, key: floorKey });
      await inFlight(
        4,
        Array.from({ length: PARTS }, (_, k) => async () => {
          const res = await request('GET', `${proxy.url}/object?${q}`, { range: `bytes=${k * P}-${(k + 1) * P - 1}` });
          if (res.status !== 206 || res.bytes !== P) throw new Error(`floor GET answered ${res.status} with ${res.bytes} bytes`);
        }),
      );
    },
    'services upload': async () => {
      const range = (k) => `bytes ${k * P}-${(k + 1) * P - 1}/${TOTAL}`;
      const first = await request('POST', api, { ...auth, 'content-range': range(0) }, part, { keep: true });
      if (first.status !== 201) throw new Error(`POST answered ${first.status}: ${first.body}`);
      const { id } = JSON.parse(first.body);
      const statuses = await inFlight(
        4,
        Array.from({ length: PARTS - 1 }, (_, k) => async () => {
          const res = await request('PUT', `${api}/${id}`, { ...auth, 'content-range': range(k + 1) }, part, { keep: true });
          if (res.status >= 300) throw new Error(`PUT answered ${res.status}: ${res.body}`);
          return res.status;
        }),
      );
      if (PARTS > 1 && !statuses.includes(201)) throw new Error('no request completed the content');
      downloadId = id;
    },
    'services download': async () => {
      await inFlight(
        4,
        Array.from({ length: PARTS }, (_, k) => async () => {
          const res = await request('GET', `${api}/${downloadId}`, { ...auth, range: `bytes=${k * P}-${(k + 1) * P - 1}` });
          if (res.status !== 206 || res.bytes !== P) throw new Error(`GET answered ${res.status} with ${res.bytes} bytes`);
        }),
      );
    },
  };
  const pidsOf = {
    floor: { client: process.pid, hop: proxy.pid, receiver: receiver.pid, ...backing },
    services: { client: process.pid, hop: byName.gateway, receiver: byName['content-service'], ...backing },
  };

  const best = {};
  try {
    for (let round = 0; round < ROUNDS; round++) {
      // Uploads come before their downloads; which path goes first alternates.
      const order = round % 2 === 0 ? ['floor', 'services'] : ['services', 'floor'];
      for (const direction of ['upload', 'download']) {
        for (const path of order) {
          const name = `${path} ${direction}`;
          const m = await measure(pidsOf[path], phases[name]);
          console.log(
            `round ${round + 1} ${name.padEnd(18)} ${m.mbps.toFixed(0).padStart(5)} MB/s  cpu-s/GiB ${Object.entries(m.cpu)
              .map(([n, v]) => `${n}=${v.toFixed(2)}`)
              .join(' ')}`,
          );
          if (name === 'floor download') {
            // The floor's object is read once per round; drop it so rounds do not pile up GiBs.
            await s3.send(new DeleteObjectCommand({ Bucket, Key: floorKey }));
          }
          const b = (best[name] ??= { mbps: 0, cpu: {} });
          b.mbps = Math.max(b.mbps, m.mbps);
          for (const [n, v] of Object.entries(m.cpu)) b.cpu[n] = Math.min(b.cpu[n] ?? Infinity, v);
        }
      }
    }
    const rows = [
      ['client', 'client', 'client'],
      ['gateway', 'hop', 'bare proxy'],
      ['content-service', 'receiver', 'bare receiver'],
      ['s3 server', 's3 server', 's3 server'],
      ['database', 'database', 'database'],
    ];
    console.log(
      `\nCPU-s per GiB, best of ${ROUNDS} rounds (${GIB} GiB, 64 MiB parts, 4 in flight; floors on V8 flags: ${FLOOR_NODE_ARGS.join(' ') || 'defaults'})`,
    );
    console.log('process          | upload | floor  | ratio | download | floor  | ratio');
    for (const [label, key, floorLabel] of rows) {
      const cells = ['upload', 'download'].map((d) => {
        const s = best[`services ${d}`].cpu[key];
        const f = best[`floor ${d}`].cpu[key];
        const ratio = label === 'gateway' || label === 'content-service' ? (s / f).toFixed(2) : '';
        return `${s.toFixed(2).padStart(d.length)} | ${f.toFixed(2).padStart(6)} | ${ratio.padStart(5)}`;
      });
      console.log(`${label.padEnd(16)} | ${cells[0]} | ${cells[1]}   (floor: ${floorLabel})`);
    }
    console.log(
      `MB/s: services upload ${best['services upload'].mbps.toFixed(0)}, floor upload ${best['floor upload'].mbps.toFixed(0)}; services download ${best['services download'].mbps.toFixed(0)}, floor download ${best['floor download'].mbps.toFixed(0)}`,
    );
  } finally {
    proxy.stop();
    receiver.stop();
    await stack.stop();
    await purgeStackData(stack.prefix, stack.backing);
    for (const Key of keys) await s3.send(new DeleteObjectCommand({ Bucket, Key })).catch(() => undefined);
    await s3.send(new DeleteBucketCommand({ Bucket })).catch(() => undefined);
  }
})().catch((error) => {
  console.error(error);
  process.exit(1);
});
