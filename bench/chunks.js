// 1 GiB uploaded as 1 MiB chunks (8 in flight, the C# client's size) versus as 64 MiB parts
// (4 in flight), through the gateway, in one run; MB/s of each and the content-service's peak RSS
// (highest of the rounds). As the reference for that ratio, the same bytes sent by this process
// straight to the S3 server, no services in between: 64 MiB UploadParts, and 1 MiB PutObjects read back into 64 MiB
// UploadParts (the S3 work that staging chunks cannot avoid). Their ratio is the most the
// services could reach on this machine with this S3 server.
//   pnpm bench chunks [--gib 1] [--rounds 2] [--no-reference]
const { randomBytes, randomUUID } = require('node:crypto');
const { execFileSync } = require('node:child_process');
const { Readable } = require('node:stream');
const {
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  UploadPartCommand,
  CompleteMultipartUploadCommand,
  PutObjectCommand,
  GetObjectCommand,
  DeleteObjectsCommand,
} = require('@aws-sdk/client-s3');
const { DevKeys } = require('@cp/credentials');
const {
  MiB,
  ensureBackingServers,
  peakRssMiB,
  resetPeakRss,
  inFlight,
  timed,
  mbps,
  startStack,
  request,
  s3Client,
  benchArgs,
} = require('./_support');
const { purgeStackData } = require('../tools/devstack/purge');

const args = benchArgs();
const GIB = Number(args.gib ?? 1);
const ROUNDS = Number(args.rounds ?? 2);
const REFERENCE = !('no-reference' in args);
const P = 64 * MiB;

async function upload(api, auth, total, size, parallel, data) {
  const pieces = total / size;
  const range = (i) => `bytes ${i * size}-${(i + 1) * size - 1}/${total}`;
  const first = await request('POST', api, { ...auth, 'content-range': range(0) }, data.subarray(0, size), {
    keep: true,
  });
  if (first.status !== 201) throw new Error(`POST answered ${first.status}: ${first.body}`);
  const { id } = JSON.parse(first.body);
  const statuses = await inFlight(
    parallel,
    Array.from({ length: pieces - 1 }, (_, i) => async () => {
      const off = ((i + 1) * size) % data.length;
      const res = await request(
        'PUT',
        `${api}/${id}`,
        { ...auth, 'content-range': range(i + 1) },
        data.subarray(off, off + size),
        { keep: true },
      );
      if (res.status >= 300) throw new Error(`PUT answered ${res.status}: ${res.body}`);
      return res.status;
    }),
  );
  if (!statuses.includes(201)) throw new Error('no request completed the content');
  return id;
}

/** `total` bytes into one multipart object straight on S3, as 64 MiB parts (4 in flight) or staged 1 MiB pieces (8 in flight). */
async function s3Alone(s3, Bucket, Key, total, data, staged) {
  const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket, Key }));
  const partCount = total / P;
  const etags = new Array(partCount);
  const uploadPart = async (k, Body) => {
    etags[k] = (
      await s3.send(new UploadPartCommand({ Bucket, Key, UploadId, PartNumber: k + 1, Body, ContentLength: P }))
    ).ETag;
  };
  if (!staged) {
    await inFlight(
      4,
      Array.from({ length: partCount }, (_, k) => () => uploadPart(k, data)),
    );
  } else {
    const perPart = P / MiB;
    const pieceKey = (k, j) => `staging/${k}/${j}`;
    const missing = new Array(partCount).fill(perPart);
    const assemblies = [];
    const assemble = async (k) => {
      const pieces = async function* () {
        for (let j = 0; j < perPart; j++)
          yield* (await s3.send(new GetObjectCommand({ Bucket, Key: pieceKey(k, j) }))).Body;
      };
      await uploadPart(k, Readable.from(pieces()));
      await s3.send(
        new DeleteObjectsCommand({
          Bucket,
          Delete: { Objects: Array.from({ length: perPart }, (_, j) => ({ Key: pieceKey(k, j) })) },
        }),
      );
    };
    await inFlight(
      8,
      Array.from({ length: total / MiB }, (_, i) => async () => {
        const k = Math.floor(i / perPart);
        const j = i % perPart;
        await s3.send(
          new PutObjectCommand({
            Bucket,
            Key: pieceKey(k, j),
            Body: data.subarray(j * MiB, (j + 1) * MiB),
            ContentLength: MiB,
          }),
        );
        if (--missing[k] === 0) assemblies.push(assemble(k));
      }),
    );
    await Promise.all(assemblies);
  }
  const Parts = etags.map((ETag, k) => ({ ETag, PartNumber: k + 1 }));
  await s3.send(new CompleteMultipartUploadCommand({ Bucket, Key, UploadId, MultipartUpload: { Parts } }));
}

/**
 * Times one phase after writing out the dirty pages earlier phases left (the S3 server writes to
 * disk): otherwise whichever phase runs later pays for the writeback of the ones before it.
 */
function phase(fn) {
  execFileSync('sync');
  return timed(fn);
}

async function main() {
  ensureBackingServers();
  const stack = await startStack({ prefix: `benchc${Date.now().toString(36)}`, env: { LOG_LEVEL: 'warn' } });
  const content = stack.services.find((s) => s.name === 'content-service');
  const s3 = s3Client();
  try {
    const total = GIB * 1024 * MiB;
    const data = randomBytes(P);
    const owner = randomUUID();
    const auth = {
      authorization: `Bearer ${await new DevKeys(stack.keysDir).mint({ owners: [owner], ttlSeconds: 3600 })}`,
    };
    const api = `${stack.gatewayUrl}/v1/${owner}/contents`;
    const Bucket = `${stack.prefix}-reference`;
    await s3.send(new CreateBucketCommand({ Bucket }));

    const phases = {
      parts: async () => upload(api, auth, total, P, 4, data),
      chunks: async () => {
        const id = await upload(api, auth, total, MiB, 8, data);
        const check = await request('HEAD', `${api}/${id}`, auth);
        if (check.headers['x-upload-state'] !== 'ready' || Number(check.headers['content-length']) !== total)
          throw new Error('chunked upload did not end ready');
      },
      s3Parts: async () => s3Alone(s3, Bucket, 'parts', total, data, false),
      s3Staged: async () => s3Alone(s3, Bucket, 'staged', total, data, true),
    };
    if (!REFERENCE) {
      delete phases.s3Parts;
      delete phases.s3Staged;
    }
    // The machine's state drifts as data is written (the S3 server's disk, caches): phases run in
    // turn, in the reverse order every other round, and each one's best round is reported.
    const best = {};
    const rss = {};
    for (let round = 0; round < ROUNDS; round++) {
      const names = Object.keys(phases);
      for (const name of round % 2 === 0 ? names : names.reverse()) {
        resetPeakRss(content.pid);
        const { seconds } = await phase(phases[name]);
        best[name] = Math.min(best[name] ?? Infinity, seconds);
        rss[name] = Math.max(rss[name] ?? 0, peakRssMiB(content.pid));
      }
    }
    const rate = (name) => mbps(total, best[name]).toFixed(0).padStart(5);
    console.log(`\n${GIB} GiB through the gateway, best of ${ROUNDS} round(s); peak RSS the highest`);
    console.log(
      `64 MiB parts, 4 in flight: ${rate('parts')} MB/s   content-service peak RSS ${rss.parts.toFixed(0)} MiB`,
    );
    console.log(
      `1 MiB chunks, 8 in flight: ${rate('chunks')} MB/s   content-service peak RSS ${rss.chunks.toFixed(0)} MiB`,
    );
    console.log(`ratio chunks / parts: ${(best.parts / best.chunks).toFixed(2)}`);
    if (REFERENCE) {
      console.log(`\nreference: ${GIB} GiB from this process straight to the S3 server, no services`);
      console.log(`64 MiB UploadParts, 4 in flight:                          ${rate('s3Parts')} MB/s`);
      console.log(`1 MiB PutObjects (8 in flight) read back into UploadParts: ${rate('s3Staged')} MB/s`);
      console.log(`ratio staged / parts on the S3 server alone: ${(best.s3Parts / best.s3Staged).toFixed(2)}`);
      console.log(
        `the services' chunks reach ${(best.s3Staged / best.chunks).toFixed(2)} of the staged rate, their parts ${(best.s3Parts / best.parts).toFixed(2)} of the parts rate`,
      );
    }
  } finally {
    s3.destroy();
    await stack.stop();
    await purgeStackData(stack.prefix, stack.backing);
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
