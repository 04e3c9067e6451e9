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
// Downloads run once per client of --clients (bench/_clients.js: this process's node:http, which
// reads whatever a socket read brought; curl; a reader of 16 KiB per socket read), each also
// straight to S3 from the same client, for the MB/s ratio services / S3.
//   pnpm bench hops [--gib 1] [--rounds 5] [--default-v8] [--clients node,curl,reader16k]
//   (CP_BENCH_PROFILE=<dir> also writes CPU profiles of the content-service and the gateway)
const fs = require('node:fs');
const { execFileSync } = require('node:child_process');
const { randomBytes, randomUUID } = require('node:crypto');
const {
  CreateBucketCommand,
  DeleteObjectCommand,
  GetObjectCommand,
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
  drain,
  s3MultipartUpload,
} = require('./_support');
const { clientsArg, curlGet, smallReadsGet } = require('./_clients');
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
const CLIENTS = clientsArg(args);

const cpuSeconds = (pid) => {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  // utime + stime, in clock ticks of 1/100 s; for this process, with its children waited for
  // (the curl processes: the floors and services are waited for only at the end).
  const own = Number(f[11]) + Number(f[12]);
  return (pid === process.pid ? own + Number(f[13]) + Number(f[14]) : own) / 100;
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

  /** GETs of every 64 MiB range of `url`, 4 in flight, with `client`; `s3` signs them for the S3 server. */
  const getRanges = (client, url, headers, s3 = false) =>
    inFlight(
      4,
      Array.from({ length: PARTS }, (_, k) => async () => {
        const [a, b] = [k * P, (k + 1) * P - 1];
        const res =
          client === 'curl'
            ? await curlGet(url, a, b, { headers, s3 })
            : client === 'reader16k'
              ? await smallReadsGet(url, a, b, { headers, s3 })
              : await request('GET', url, { ...headers, range: `bytes=${a}-${b}` });
        if (res.status !== 206 || res.bytes !== P)
          throw new Error(`${client} GET answered ${res.status} with ${res.bytes} bytes`);
      }),
    );

  const floorPhases = {
    upload: async () => {
      const Key = `floor-${keys.length}`;
      keys.push(Key);
      await s3MultipartUpload({
        s3,
        Bucket,
        Key,
        parts: PARTS,
        concurrency: 4,
        sendPart: async (n, UploadId) => {
          const q = new URLSearchParams({ bucket: Bucket, key: Key, upload: UploadId, n: String(n) });
          const res = await request('PUT', `${receiverProxy.url}/part?${q}`, {}, part, { keep: true });
          if (res.status !== 200) throw new Error(`floor PUT answered ${res.status}: ${res.body}`);
          return JSON.parse(res.body).etag;
        },
      });
      floorKey = Key;
    },
    download: (client) =>
      getRanges(client, `${receiverProxy.url}/object?${new URLSearchParams({ bucket: Bucket, key: floorKey })}`, {}),
  };
  /** Straight to the S3 server, the floor's object: the node client with @aws-sdk/client-s3. */
  const s3Phases = {
    download: (client) =>
      client === 'node'
        ? inFlight(
            4,
            Array.from({ length: PARTS }, (_, k) => async () => {
              const Range = `bytes=${k * P}-${(k + 1) * P - 1}`;
              const n = await drain((await s3.send(new GetObjectCommand({ Bucket, Key: floorKey, Range }))).Body);
              if (n !== P) throw new Error(`GetObject gave ${n} bytes`);
            }),
          )
        : getRanges(client, `${process.env.S3_ENDPOINT}/${Bucket}/${floorKey}`, {}, true),
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
      download: (client) => getRanges(client, `${api}/${id}`, auth),
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
    s3: { phases: s3Phases, pids: {}, only: 'download' },
  };
  for (const p of Object.values(paths)) p.pids = { client: process.pid, ...p.pids, ...backing };

  const seen = {};
  const record = (name, m) => {
    console.log(
      `round ${m.round} ${name.padEnd(34)} ${m.mbps.toFixed(0).padStart(5)} MB/s  cpu-s/GiB ${Object.entries(m.cpu)
        .map(([n, v]) => `${n}=${v.toFixed(2)}`)
        .join(' ')}`,
    );
    const b = (seen[name] ??= { mbps: [], cpu: {} });
    b.mbps.push(m.mbps);
    for (const [n, v] of Object.entries(m.cpu)) (b.cpu[n] ??= []).push(v);
  };
  // The node client's downloads keep their old names (`<path> download`); the others' end in the client.
  const key = (path, direction, client = 'node') =>
    `${path} ${direction}${direction === 'download' && client !== 'node' ? ` ${client}` : ''}`;
  const stats = {
    best: (v) => Math.min(...v),
    median: (v) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)],
  };
  try {
    const names = Object.keys(paths);
    for (let round = 0; round < ROUNDS; round++) {
      // Uploads come before their downloads; which path goes first rotates.
      const order = names.map((_, i) => names[(i + round) % names.length]);
      for (const path of order.filter((p) => paths[p].only !== 'download')) {
        record(key(path, 'upload'), {
          round: round + 1,
          ...(await measure(paths[path].pids, paths[path].phases.upload)),
        });
      }
      for (const client of CLIENTS) {
        for (const path of order) {
          const m = await measure(paths[path].pids, () => paths[path].phases.download(client));
          record(key(path, 'download', client), { round: round + 1, ...m });
        }
      }
      // The floor's object is read once per round; drop it so rounds do not pile up GiBs.
      await s3.send(new DeleteObjectCommand({ Bucket, Key: floorKey }));
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
    const cell = (stat, label, path, k, floorPath, what) => {
      const s = stat(seen[`${path} ${what}`].cpu[k]);
      const f = stat(seen[`${floorPath} ${what}`].cpu[k]);
      const ratio = label === 'gateway' || label === 'content-service' ? (s / f).toFixed(2) : '';
      return `${s.toFixed(2).padStart(what.length)} | ${f.toFixed(2).padStart(6)} | ${ratio.padStart(5)}`;
    };
    for (const [statName, stat] of Object.entries(stats)) {
      if (CLIENTS.includes('node')) {
        console.log(
          `\nCPU-s per GiB, ${statName} of ${ROUNDS} rounds (${GIB} GiB, 64 MiB parts, 4 in flight, node client; floors on V8 flags: ${FLOOR_NODE_ARGS.join(' ') || 'defaults'})`,
        );
        console.log('process          | upload | floor  | ratio | download | floor  | ratio');
        for (const [label, path, k, floorPath, floorLabel] of rows) {
          const cells = ['upload', 'download'].map((d) => cell(stat, label, path, k, floorPath, d));
          console.log(`${label.padEnd(16)} | ${cells[0]} | ${cells[1]}   (floor: ${floorLabel})`);
        }
        const cs = ['upload', 'download'].map((d) => stat(seen[`services ${d}`].cpu.receiver).toFixed(2));
        console.log(`content-service behind the gateway: ${cs[0]} upload, ${cs[1]} download`);
      }
      // Downloads by each client, against its floors and straight to S3 from the same client.
      console.log(`\nDownloads, CPU-s per GiB, ${statName} of ${ROUNDS} rounds, by client (ratio: over its floor)`);
      console.log(
        'client     | gateway | floor | ratio | content-service | floor | ratio | behind gw | client | s3 server | MB/s services | s3 | ratio',
      );
      for (const client of CLIENTS) {
        const d = key('', 'download', client).trim();
        const cpu = (path, k) => stat(seen[`${path} ${d}`].cpu[k]);
        const gw = [cpu('services', 'hop'), cpu('gateway floor', 'hop')];
        const cs = [cpu('gateway floor', 'receiver'), cpu('receiver floor', 'receiver')];
        const mb = (path) => stat(seen[`${path} ${d}`].mbps.map((v) => -v)) * -1; // best (or median) MB/s
        const perRound = seen[`services ${d}`].mbps.map((v, i) => v / seen[`s3 ${d}`].mbps[i]);
        const ratio = statName === 'best' ? mb('services') / mb('s3') : stat(perRound.map((v) => -v)) * -1;
        console.log(
          [
            client.padEnd(10),
            gw[0].toFixed(2).padStart(7),
            gw[1].toFixed(2).padStart(5),
            (gw[0] / gw[1]).toFixed(2).padStart(5),
            cs[0].toFixed(2).padStart(15),
            cs[1].toFixed(2).padStart(5),
            (cs[0] / cs[1]).toFixed(2).padStart(5),
            cpu('services', 'receiver').toFixed(2).padStart(9),
            cpu('services', 'client').toFixed(2).padStart(6),
            cpu('services', 's3 server').toFixed(2).padStart(9),
            mb('services').toFixed(0).padStart(13),
            mb('s3').toFixed(0).padStart(4),
            ratio.toFixed(2).padStart(5),
          ].join(' | '),
        );
      }
    }
    const best = (name) => Math.max(...seen[name].mbps).toFixed(0);
    console.log(
      `best MB/s: ${['upload', 'download']
        .map((d) =>
          names
            .filter((p) => seen[key(p, d)])
            .map((p) => `${p} ${d} ${best(key(p, d))}`)
            .join(', '),
        )
        .join('; ')}`,
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
