// What each hop of the data path costs, in CPU seconds per GiB, upload and download, against floors
// measured in the same run. Three paths, each hop held against a floor that has the same neighbours:
//   services:      client -> gateway    -> content-service -> S3 server (+ database)
//   gateway floor: client -> bare proxy -> content-service -> S3 server (+ database)
//   receiver floor: client -> bare proxy -> bare receiver  -> S3 server
// The bare proxy is http.request piped both ways; the bare receiver streams a PUT body into
// UploadPart and a ranged GetObject into its answer, with nothing else (bench/_floor.js). The
// gateway's ratio is its CPU-s/GiB over the bare proxy's in front of the same content-service; the
// content-service's is its own behind that bare proxy over the bare receiver's behind a bare proxy.
// A process's CPU per byte here depends on its neighbours as much as on itself (how much each
// wake-up finds to read), so each hop is compared only with a floor between the same two peers.
// 64 MiB parts (or 64 MiB ranges), 4 in flight. Paths rotate order over rounds; for each process
// the lowest CPU over the rounds (the best of N) and the median are reported, with the best MB/s.
//   pnpm bench hops [--gib 1] [--rounds 5] [--default-v8]
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
const {
  MiB,
  floorProcess,
  ensureBackingServers,
  inFlight,
  timed,
  mbps,
  startStack,
  request,
  s3Client,
  benchArgs,
} = require('./_support');
const { SERVICE_NODE_ARGS } = require('../tools/devstack/stack');
const { purgeStackData } = require('../tools/devstack/purge');

const args = benchArgs();
const GIB = Number(args.gib ?? 1);
const ROUNDS = Number(args.rounds ?? 5);
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
  const receiverProxy = await floorProcess(['proxy', receiver.url], FLOOR_NODE_ARGS);
  const stack = await startStack({ prefix: `hops${Date.now().toString(36)}`, env: { LOG_LEVEL: 'warn' } });
  const byName = Object.fromEntries(stack.services.map((s) => [s.name, s]));
  const serviceProxy = await floorProcess(['proxy', byName['content-service'].url], FLOOR_NODE_ARGS);
  const backing = { 's3 server': pidOf('versitygw'), database: pidOf('ferretdb') };
  const owner = randomUUID();
  const auth = { authorization: `Bearer ${await new DevKeys(stack.keysDir).mint({ owners: [owner] })}` };
  const keys = [];
  let floorKey;

  const floorPhases = {
    upload: async () => {
      const Key = `floor-${keys.length}`;
      keys.push(Key);
      const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket, Key }));
      const etags = await inFlight(
        4,
        Array.from({ length: PARTS }, (_, k) => async () => {
          const q = new URLSearchParams({ bucket: Bucket, key: Key, upload: UploadId, n: String(k + 1) });
          const res = await request('PUT', `${receiverProxy.url}/part?${q}`, {}, part, { keep: true });
          if (res.status !== 200) throw new Error(`floor PUT answered ${res.status}: ${res.body}`);
          return JSON.parse(res.body).etag;
        }),
      );
      await s3.send(
        new CompleteMultipartUploadCommand({
          Bucket,
          Key,
          UploadId,
          MultipartUpload: { Parts: etags.map((ETag, k) => ({ ETag, PartNumber: k + 1 })) },
        }),
      );
      floorKey = Key;
    },
    download: async () => {
      const q = new URLSearchParams({ bucket: Bucket, key: floorKey });
      await inFlight(
        4,
        Array.from({ length: PARTS }, (_, k) => async () => {
          const res = await request('GET', `${receiverProxy.url}/object?${q}`, {
            range: `bytes=${k * P}-${(k + 1) * P - 1}`,
          });
          if (res.status !== 206 || res.bytes !== P)
            throw new Error(`floor GET answered ${res.status} with ${res.bytes} bytes`);
        }),
      );
    },
  };
  /** The content API's upload and download, through `base` (the gateway, or a bare proxy in front of the content-service). */
  const servicePhases = (base) => {
    const api = `${base}/v1/${owner}/contents`;
    let id;
    return {
      upload: async () => {
        const range = (k) => `bytes ${k * P}-${(k + 1) * P - 1}/${TOTAL}`;
        const first = await request('POST', api, { ...auth, 'content-range': range(0) }, part, { keep: true });
        if (first.status !== 201) throw new Error(`POST answered ${first.status}: ${first.body}`);
        id = JSON.parse(first.body).id;
        const statuses = await inFlight(
          4,
          Array.from({ length: PARTS - 1 }, (_, k) => async () => {
            const res = await request('PUT', `${api}/${id}`, { ...auth, 'content-range': range(k + 1) }, part, {
              keep: true,
            });
            if (res.status >= 300) throw new Error(`PUT answered ${res.status}: ${res.body}`);
            return res.status;
          }),
        );
        if (PARTS > 1 && !statuses.includes(201)) throw new Error('no request completed the content');
      },
      download: async () => {
        await inFlight(
          4,
          Array.from({ length: PARTS }, (_, k) => async () => {
            const res = await request('GET', `${api}/${id}`, { ...auth, range: `bytes=${k * P}-${(k + 1) * P - 1}` });
            if (res.status !== 206 || res.bytes !== P)
              throw new Error(`GET answered ${res.status} with ${res.bytes} bytes`);
          }),
        );
      },
    };
  };
  const paths = {
    services: {
      phases: servicePhases(stack.gatewayUrl),
      pids: { hop: byName.gateway.pid, receiver: byName['content-service'].pid },
    },
    'gateway floor': {
      phases: servicePhases(serviceProxy.url),
      pids: { hop: serviceProxy.pid, receiver: byName['content-service'].pid },
    },
    'receiver floor': { phases: floorPhases, pids: { hop: receiverProxy.pid, receiver: receiver.pid } },
  };
  for (const p of Object.values(paths)) p.pids = { client: process.pid, ...p.pids, ...backing };

  const seen = {};
  try {
    const names = Object.keys(paths);
    for (let round = 0; round < ROUNDS; round++) {
      // Uploads come before their downloads; which path goes first rotates.
      const order = names.map((_, i) => names[(i + round) % names.length]);
      for (const direction of ['upload', 'download']) {
        for (const path of order) {
          const m = await measure(paths[path].pids, paths[path].phases[direction]);
          const name = `${path} ${direction}`;
          if (name === 'receiver floor download') {
            // The floor's object is read once per round; drop it so rounds do not pile up GiBs.
            await s3.send(new DeleteObjectCommand({ Bucket, Key: floorKey }));
          }
          console.log(
            `round ${round + 1} ${name.padEnd(24)} ${m.mbps.toFixed(0).padStart(5)} MB/s  cpu-s/GiB ${Object.entries(
              m.cpu,
            )
              .map(([n, v]) => `${n}=${v.toFixed(2)}`)
              .join(' ')}`,
          );
          const b = (seen[name] ??= { mbps: 0, cpu: {} });
          b.mbps = Math.max(b.mbps, m.mbps);
          for (const [n, v] of Object.entries(m.cpu)) (b.cpu[n] ??= []).push(v);
        }
      }
    }
    // [label, the path it is measured on, its key there (the same on its floor's path), the path of its floor, the floor's name]
    const rows = [
      ['client', 'services', 'client', 'receiver floor', 'client'],
      ['gateway', 'services', 'hop', 'gateway floor', 'bare proxy in front of the content-service'],
      // The content-service behind a bare proxy, as the bare receiver is: the same neighbours.
      ['content-service', 'gateway floor', 'receiver', 'receiver floor', 'bare receiver behind a bare proxy'],
      ['s3 server', 'services', 's3 server', 'receiver floor', 's3 server'],
      ['database', 'services', 'database', 'receiver floor', 'database'],
    ];
    const stats = {
      best: (v) => Math.min(...v),
      median: (v) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)],
    };
    for (const [statName, stat] of Object.entries(stats)) {
      console.log(
        `\nCPU-s per GiB, ${statName} of ${ROUNDS} rounds (${GIB} GiB, 64 MiB parts, 4 in flight; floors on V8 flags: ${FLOOR_NODE_ARGS.join(' ') || 'defaults'})`,
      );
      console.log('process          | upload | floor  | ratio | download | floor  | ratio');
      for (const [label, path, key, floorPath, floorLabel] of rows) {
        const cells = ['upload', 'download'].map((d) => {
          const s = stat(seen[`${path} ${d}`].cpu[key]);
          const f = stat(seen[`${floorPath} ${d}`].cpu[key]);
          const ratio = label === 'gateway' || label === 'content-service' ? (s / f).toFixed(2) : '';
          return `${s.toFixed(2).padStart(d.length)} | ${f.toFixed(2).padStart(6)} | ${ratio.padStart(5)}`;
        });
        console.log(`${label.padEnd(16)} | ${cells[0]} | ${cells[1]}   (floor: ${floorLabel})`);
      }
      const cs = ['upload', 'download'].map((d) => stat(seen[`services ${d}`].cpu.receiver).toFixed(2));
      console.log(`content-service behind the gateway: ${cs[0]} upload, ${cs[1]} download`);
    }
    console.log(
      `best MB/s: ${['upload', 'download'].map((d) => names.map((p) => `${p} ${d} ${seen[`${p} ${d}`].mbps.toFixed(0)}`).join(', ')).join('; ')}`,
    );
  } finally {
    serviceProxy.stop();
    receiverProxy.stop();
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
