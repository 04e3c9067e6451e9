// Upload and download of 1 GiB in 64 MiB parts, 4 in flight, through the gateway, against the
// same bytes sent straight to the S3 server with @aws-sdk/client-s3 from this process; then the
// content-service's CPU per GiB uploaded with and without a Content-Digest on each part; then, for
// each other client of --clients (bench/_clients.js: curl, a reader of 16 KiB per socket read), the
// downloads (and curl's uploads) through the gateway against the same client straight to S3,
// --client-rounds rounds alternating which goes first, with the gateway's and the content-service's
// CPU-s per GiB.
// Last, the direct path (bench/_direct.js) against the S3 SDK, --direct-rounds rounds.
//   pnpm bench contents [--gib 1] [--in-flight 4] [--digest-rounds 2] [--clients node,curl,reader16k]
//                       [--client-rounds 2] [--direct-rounds 2]
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { createHash, randomBytes, randomUUID } = require('node:crypto');
const {
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  GetObjectCommand,
} = require('@aws-sdk/client-s3');
const { DevKeys } = require('@cp/credentials');
const {
  MiB,
  cpuMs,
  ensureBackingServers,
  peakRssMiB,
  inFlight,
  timed,
  s3Client,
  drain,
  mbps,
  startStack,
  request,
  benchArgs,
  s3MultipartUpload,
} = require('./_support');
const { purgeStackData } = require('../tools/devstack/purge');
const { clientsArg, curlGet, curlPut, smallReadsGet } = require('./_clients');
const { directRounds } = require('./_direct');

const args = benchArgs();
const GIB = Number(args.gib ?? 1);
const IN_FLIGHT = Number(args['in-flight'] ?? 4);
const P = 64 * MiB;
const DIGEST_ROUNDS = Number(args['digest-rounds'] ?? 2);
const CLIENTS = clientsArg(args);
const CLIENT_ROUNDS = Number(args['client-rounds'] ?? 2);
const DIRECT_ROUNDS = Number(args['direct-rounds'] ?? 2);

async function main() {
  ensureBackingServers();
  const prefix = `bench${Date.now().toString(36)}`;
  const stack = await startStack({ prefix, env: { LOG_LEVEL: 'warn' } });
  const content = stack.services.find((s) => s.name === 'content-service');
  const gateway = stack.services.find((s) => s.name === 'gateway');
  const partFile = path.join(os.tmpdir(), `cp-bench-part-${randomUUID()}`);
  try {
    const total = GIB * 1024 * MiB;
    const parts = total / P;
    const part = randomBytes(P);
    const owner = randomUUID();
    const token = await new DevKeys(stack.keysDir).mint({ owners: [owner], ttlSeconds: 3600 });
    const auth = { authorization: `Bearer ${token}` };
    const api = `${stack.gatewayUrl}/v1/${owner}/contents`;
    const range = (k) => `bytes ${k * P}-${(k + 1) * P - 1}/${total}`;

    // The whole content through the gateway: the first part by POST, the rest by PUT, IN_FLIGHT at once.
    const uploadThroughGateway = async (headers = {}) => {
      const first = await request('POST', api, { ...auth, ...headers, 'content-range': range(0) }, part, {
        keep: true,
      });
      if (first.status !== 201) throw new Error(`POST answered ${first.status}: ${first.body}`);
      const { id } = JSON.parse(first.body);
      const statuses = await inFlight(
        IN_FLIGHT,
        Array.from(
          { length: parts - 1 },
          (_, i) => async () =>
            (await request('PUT', `${api}/${id}`, { ...auth, ...headers, 'content-range': range(i + 1) }, part)).status,
        ),
      );
      if (!statuses.includes(201)) throw new Error(`no part completed the content: ${statuses}`);
      return id;
    };

    const upGw = await timed(() => uploadThroughGateway());
    const id = upGw.value;
    const downGw = await timed(async () => {
      const sizes = await inFlight(
        IN_FLIGHT,
        Array.from({ length: parts }, (_, k) => async () => {
          const res = await request('GET', `${api}/${id}`, { ...auth, range: `bytes=${k * P}-${(k + 1) * P - 1}` });
          if (res.status !== 206) throw new Error(`GET answered ${res.status}`);
          return res.bytes;
        }),
      );
      return sizes.reduce((a, b) => a + b, 0);
    });
    if (downGw.value !== total) throw new Error(`downloaded ${downGw.value} of ${total} bytes`);

    // straight to S3, same process, same part size and concurrency
    const s3 = s3Client();
    const Bucket = `${prefix}-direct`;
    await s3.send(new CreateBucketCommand({ Bucket }));
    const Key = 'direct-object';
    const upS3 = await timed(() => s3MultipartUpload({ s3, Bucket, Key, parts, concurrency: IN_FLIGHT, part, P }));
    const downS3 = await timed(async () => {
      const sizes = await inFlight(
        IN_FLIGHT,
        Array.from(
          { length: parts },
          (_, k) => async () =>
            drain(
              (await s3.send(new GetObjectCommand({ Bucket, Key, Range: `bytes=${k * P}-${(k + 1) * P - 1}` }))).Body,
            ),
        ),
      );
      return sizes.reduce((a, b) => a + b, 0);
    });

    const rssAfter4 = { content: peakRssMiB(content.pid), gateway: peakRssMiB(gateway.pid) };

    // 8 parts of 64 MiB in flight at once: the content-service must not grow with them
    await timed(async () => {
      const first = await request('POST', api, { ...auth, 'content-range': range(0) }, part, { keep: true });
      const { id: id8 } = JSON.parse(first.body);
      await inFlight(
        8,
        Array.from(
          { length: Math.min(parts - 1, 15) },
          (_, i) => async () => request('PUT', `${api}/${id8}`, { ...auth, 'content-range': range(i + 1) }, part),
        ),
      );
    });
    const rssAfter8 = { content: peakRssMiB(content.pid), gateway: peakRssMiB(gateway.pid) };

    // The content-service's CPU per GiB uploaded, each part with and without its Content-Digest
    // (computed here beforehand), alternating.
    const digest = `sha-256=:${createHash('sha256').update(part).digest('base64')}:`;
    const uploadCpu = async (headers) => {
      const before = cpuMs(content.pid);
      const up = await timed(() => uploadThroughGateway(headers));
      return { cpuPerGiB: (cpuMs(content.pid) - before) / 1000 / GIB, seconds: up.seconds };
    };
    const plain = [];
    const digested = [];
    for (let r = 0; r < DIGEST_ROUNDS; r++) {
      plain.push(await uploadCpu({}));
      digested.push(await uploadCpu({ 'content-digest': digest }));
    }

    const row = (name, gw, direct) =>
      `${name.padEnd(9)} gateway ${mbps(total, gw.seconds).toFixed(0).padStart(5)} MB/s   direct S3 ${mbps(total, direct.seconds).toFixed(0).padStart(5)} MB/s   ratio ${(direct.seconds / gw.seconds).toFixed(2)}`;
    console.log(`\n${GIB} GiB in ${parts} parts of 64 MiB, ${IN_FLIGHT} in flight`);
    console.log(row('upload', upGw, upS3));
    console.log(row('download', downGw, downS3));
    console.log(
      `peak RSS after ${IN_FLIGHT} in flight: content-service ${rssAfter4.content.toFixed(0)} MiB, gateway ${rssAfter4.gateway.toFixed(0)} MiB`,
    );
    console.log(
      `peak RSS after 8 parts of 64 MiB in flight: content-service ${rssAfter8.content.toFixed(0)} MiB, gateway ${rssAfter8.gateway.toFixed(0)} MiB`,
    );
    const cpu = (runs) => runs.map((r) => r.cpuPerGiB.toFixed(2)).join(', ');
    const least = (runs) => Math.min(...runs.map((r) => r.cpuPerGiB));
    console.log(
      `content-service CPU-s per GiB uploaded, ${DIGEST_ROUNDS} rounds alternated: without Content-Digest ${cpu(plain)}; ` +
        `with ${cpu(digested)}; least with minus least without ${(least(digested) - least(plain)).toFixed(2)} (target ≤ 0.3)`,
    );

    // Real clients: the same GiB down (and, with curl, up) through the gateway and straight to S3
    // from the same client, alternating which goes first; CPU-s per GiB of the two hops meanwhile.
    const others = CLIENTS.filter((c) => c !== 'node');
    if (others.length > 0) fs.writeFileSync(partFile, part);
    const getWith = (client, url, headers, s3) =>
      inFlight(
        IN_FLIGHT,
        Array.from({ length: parts }, (_, k) => async () => {
          const [a, b] = [k * P, (k + 1) * P - 1];
          const get = client === 'curl' ? curlGet : smallReadsGet;
          const res = await get(url, a, b, { headers, s3 });
          if (res.status !== 206 || res.bytes !== P)
            throw new Error(`${client} GET answered ${res.status} with ${res.bytes} bytes`);
        }),
      );
    const curlUploadGateway = async () => {
      const first = await curlPut(api, partFile, { method: 'POST', headers: { ...auth, 'content-range': range(0) } });
      if (first.status !== 201) throw new Error(`curl POST answered ${first.status}`);
      const { id: cid } = JSON.parse(first.body);
      const statuses = await inFlight(
        IN_FLIGHT,
        Array.from(
          { length: parts - 1 },
          (_, i) => async () =>
            (await curlPut(`${api}/${cid}`, partFile, { headers: { ...auth, 'content-range': range(i + 1) } })).status,
        ),
      );
      if (!statuses.includes(201)) throw new Error(`no curl PUT completed the content: ${statuses}`);
    };
    const curlUploadS3 = async () => {
      const CurlKey = `curl-${randomUUID()}`;
      const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket, Key: CurlKey }));
      const etags = await inFlight(
        IN_FLIGHT,
        Array.from({ length: parts }, (_, k) => async () => {
          const q = new URLSearchParams({ partNumber: String(k + 1), uploadId: UploadId });
          const res = await curlPut(`${process.env.S3_ENDPOINT}/${Bucket}/${CurlKey}?${q}`, partFile, { s3: true });
          if (res.status !== 200) throw new Error(`curl UploadPart answered ${res.status}`);
          return res.etag;
        }),
      );
      await s3.send(
        new CompleteMultipartUploadCommand({
          Bucket,
          Key: CurlKey,
          UploadId,
          MultipartUpload: { Parts: etags.map((ETag, k) => ({ ETag, PartNumber: k + 1 })) },
        }),
      );
    };
    const hops = { gateway: gateway.pid, 'content-service': content.pid };
    const measured = async (fn) => {
      const before = Object.fromEntries(Object.entries(hops).map(([n, pid]) => [n, cpuMs(pid)]));
      const t = await timed(fn);
      const cpuPerGiB = Object.fromEntries(
        Object.entries(hops).map(([n, pid]) => [n, (cpuMs(pid) - before[n]) / 1000 / GIB]),
      );
      return { mbps: mbps(total, t.seconds), cpuPerGiB };
    };
    const byClient = [];
    for (const client of others) {
      const runs = [
        [
          'download',
          () => getWith(client, `${api}/${id}`, auth, false),
          () => getWith(client, `${process.env.S3_ENDPOINT}/${Bucket}/${Key}`, {}, true),
        ],
      ];
      if (client === 'curl') runs.push(['upload', curlUploadGateway, curlUploadS3]);
      for (const [direction, viaGateway, straight] of runs) {
        const rounds = [];
        for (let r = 0; r < CLIENT_ROUNDS; r++) {
          // gateway, S3; then S3, gateway
          const [gw, direct] =
            r % 2 === 0
              ? [await measured(viaGateway), await measured(straight)]
              : [await measured(straight), await measured(viaGateway)].reverse();
          rounds.push({ gw, direct });
        }
        byClient.push({ client, direction, rounds });
      }
    }
    if (byClient.length > 0) {
      console.log(
        `\nother clients, ${CLIENT_ROUNDS} rounds alternating which path goes first (ratio: gateway / S3 in the round)`,
      );
      for (const { client, direction, rounds } of byClient) {
        for (const [r, { gw, direct }] of rounds.entries()) {
          console.log(
            `${client.padEnd(9)} ${direction.padEnd(8)} round ${r + 1}: gateway ${gw.mbps.toFixed(0).padStart(5)} MB/s   direct S3 ${direct.mbps.toFixed(0).padStart(5)} MB/s   ratio ${(gw.mbps / direct.mbps).toFixed(2)}   CPU-s/GiB gateway ${gw.cpuPerGiB.gateway.toFixed(2)}, content-service ${gw.cpuPerGiB['content-service'].toFixed(2)}`,
          );
        }
      }
    }
    const common = { api, auth, part, total, P, concurrency: IN_FLIGHT, s3, Bucket };
    if (DIRECT_ROUNDS > 0) await directRounds({ ...common, rounds: DIRECT_ROUNDS });
  } finally {
    fs.rmSync(partFile, { force: true });
    await stack.stop();
    await purgeStackData(stack.prefix, stack.backing);
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
