// tus 1.0 uploads of one file (1 GiB by default) with tus-js-client, the reference tus client: the
// platform's tus door through the gateway, and @tus/server with its S3 store (bench/_tus-server.mjs,
// a process of its own on the same S3 server) as the baseline, in the same run, rounds alternating.
// Two shapes: 64 MiB PATCHes, and the whole file in one PATCH. MB/s of each, and the door's ratio
// to @tus/server (median of the rounds).
//   pnpm bench tus [--mib 1024] [--rounds 2]
const { randomBytes, randomUUID } = require('node:crypto');
const { execFileSync, spawn } = require('node:child_process');
const path = require('node:path');
const {
  CreateBucketCommand,
  DeleteBucketCommand,
  DeleteObjectsCommand,
  ListObjectsV2Command,
  UploadPartCommand,
} = require('@aws-sdk/client-s3');
const { DevKeys } = require('@cp/credentials');
const { Upload } = require('tus-js-client');
const {
  MiB,
  benchArgs,
  cpuMs,
  ensureBackingServers,
  listeningPid,
  mbps,
  s3Client,
  s3MultipartUpload,
  startStack,
} = require('./_support');
const { freePort } = require('../tools/devstack/stack');
const { purgeStackData } = require('../tools/devstack/purge');

const args = benchArgs();
const SIZE = Number(args.mib ?? 1024) * MiB;
const ROUNDS = Number(args.rounds ?? 2);
const SHAPES = [
  { name: '64 MiB PATCHes', chunkSize: 64 * MiB },
  { name: 'one PATCH', chunkSize: Number.POSITIVE_INFINITY },
];

/** One upload to its end; seconds. */
function upload(data, endpoint, headers, chunkSize) {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const u = new Upload(data, {
      endpoint,
      headers,
      chunkSize,
      retryDelays: [],
      onError: reject,
      onSuccess: () => resolve((performance.now() - started) / 1000),
    });
    u.start();
  });
}

async function tusServer(bucket) {
  const port = await freePort();
  const child = spawn(process.execPath, [path.join(__dirname, '_tus-server.mjs'), String(port), bucket], {
    env: process.env,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise((resolve, reject) => {
    child.stdout.once('data', resolve);
    child.once('exit', (code) => reject(new Error(`@tus/server exited with ${code}`)));
  });
  return { url: `http://127.0.0.1:${port}/files`, pid: child.pid, stop: () => child.kill() };
}

/** Empties and removes the baseline's bucket. */
async function removeBucket(s3, Bucket) {
  for (let page = 0; page < 1000; page++) {
    const listed = await s3.send(new ListObjectsV2Command({ Bucket, MaxKeys: 1000 }));
    const keys = (listed.Contents ?? []).map((o) => ({ Key: o.Key }));
    if (keys.length === 0) break;
    await s3.send(new DeleteObjectsCommand({ Bucket, Delete: { Objects: keys } }));
  }
  await s3.send(new DeleteBucketCommand({ Bucket })).catch(() => undefined);
}

const median = (xs) => {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

async function main() {
  ensureBackingServers();
  const bucket = `tus-bench-${Date.now().toString(36)}`;
  const s3 = s3Client();
  await s3.send(new CreateBucketCommand({ Bucket: bucket }));
  const stack = await startStack({ prefix: `bencht${Date.now().toString(36)}`, env: { LOG_LEVEL: 'warn' } });
  const baseline = await tusServer(bucket);
  try {
    const owner = randomUUID();
    const token = await new DevKeys(stack.keysDir).mint({ owners: [owner], ttlSeconds: 3600 });
    const door = { url: `${stack.gatewayUrl}/v1/${owner}/tus`, headers: { authorization: `Bearer ${token}` } };
    const data = randomBytes(SIZE);
    console.log(`tus uploads of ${SIZE / MiB} MiB with tus-js-client, ${ROUNDS} rounds, alternating`);
    const results = new Map();
    // CPU seconds per GiB of each process an upload goes through, to see where a target loses.
    const pids = {
      bench: process.pid,
      gateway: stack.services.find((x) => x.name === 'gateway').pid,
      'content-service': stack.services.find((x) => x.name === 'content-service').pid,
      '@tus/server': baseline.pid,
      S3: listeningPid(Number(new URL(process.env.S3_ENDPOINT).port)),
    };
    const cpu = new Map();
    const cpuNow = () => Object.fromEntries(Object.entries(pids).map(([n, pid]) => [n, pid ? cpuMs(pid) : NaN]));
    // The floor of both: the same bytes as a multipart upload of 64 MiB parts straight to S3 from
    // this process, one part at a time as a tus client sends them (no HTTP hop in front of S3).
    const parts = Math.ceil(SIZE / (64 * MiB));
    const floor = [];
    for (let round = 1; round <= ROUNDS; round++) {
      execFileSync('sync');
      const started = performance.now();
      await s3MultipartUpload({
        s3,
        Bucket: bucket,
        Key: `floor-${round}`,
        parts,
        concurrency: 1,
        sendPart: async (k, UploadId) => {
          const body = data.subarray((k - 1) * 64 * MiB, Math.min(SIZE, k * 64 * MiB));
          return (
            await s3.send(
              new UploadPartCommand({ Bucket: bucket, Key: `floor-${round}`, UploadId, PartNumber: k, Body: body }),
            )
          ).ETag;
        },
      });
      floor.push(mbps(SIZE, (performance.now() - started) / 1000));
      console.log(`  round ${round}, S3 multipart straight from this process: ${floor.at(-1).toFixed(1)} MB/s`);
    }
    for (let round = 1; round <= ROUNDS; round++) {
      for (const shape of SHAPES) {
        for (const [name, target] of [
          ['the tus door (gateway)', door],
          ['@tus/server + S3Store', { url: baseline.url, headers: {} }],
        ]) {
          // Each upload starts with no dirty pages of the one before left to write back (the S3
          // server and @tus/server write to the same disk): without it, a run paid for its predecessor.
          execFileSync('sync');
          const before = cpuNow();
          const seconds = await upload(data, target.url, target.headers, shape.chunkSize);
          const after = cpuNow();
          const key = `${shape.name}|${name}`;
          results.set(key, [...(results.get(key) ?? []), mbps(SIZE, seconds)]);
          const spent = Object.keys(pids).map((n) => [n, (after[n] - before[n]) / 1000 / (SIZE / 1024 / MiB)]);
          cpu.set(key, [...(cpu.get(key) ?? []), Object.fromEntries(spent)]);
          console.log(`  round ${round}, ${shape.name}, ${name}: ${mbps(SIZE, seconds).toFixed(1)} MB/s`);
        }
      }
    }
    console.log(
      `median MB/s, and the door against @tus/server (S3 straight from this process: ${median(floor).toFixed(1)} MB/s):`,
    );
    for (const shape of SHAPES) {
      const ours = median(results.get(`${shape.name}|the tus door (gateway)`));
      const theirs = median(results.get(`${shape.name}|@tus/server + S3Store`));
      console.log(
        `  ${shape.name.padEnd(15)} door ${ours.toFixed(1)} MB/s, @tus/server ${theirs.toFixed(1)} MB/s: ${(ours / theirs).toFixed(2)}x`,
      );
    }
    console.log('CPU seconds per GiB of each process (median of the rounds; the machine has 2 cores):');
    for (const [key, rows] of cpu) {
      const used = Object.keys(pids)
        .map((n) => [n, median(rows.map((r) => r[n]))])
        .filter(([, v]) => v >= 0.01)
        .map(([n, v]) => `${n} ${v.toFixed(2)}`);
      console.log(`  ${key.replace('|', ', ').padEnd(50)} ${used.join(', ')}`);
    }
  } finally {
    baseline.stop();
    await removeBucket(s3, bucket);
    await stack.stop();
    await purgeStackData(stack.prefix, stack.backing);
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
