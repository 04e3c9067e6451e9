// 1 GiB uploaded as 1 MiB chunks (8 in flight, the C# client's size) versus as 64 MiB parts
// (4 in flight), through the gateway, in one run; MB/s of each and the content-service's peak RSS.
//   pnpm bench chunks [--gib 1]
const { randomBytes, randomUUID } = require('node:crypto');
const { DevKeys } = require('@cp/credentials');
const { MiB, ensureBackingServers, peakRssMiB, inFlight, timed, mbps, startStack, request } = require('./_support');
const { purgeStackData } = require('../scripts/purge');

const args = Object.fromEntries(process.argv.slice(2).join(' ').split('--').filter(Boolean).map((a) => a.trim().split(/\s+/)));
const GIB = Number(args.gib ?? 1);
const P = 64 * MiB;

async function upload(api, auth, total, size, parallel, data) {
  const pieces = total / size;
  const range = (i) => `bytes ${i * size}-${(i + 1) * size - 1}/${total}`;
  const first = await request('POST', api, { ...auth, 'content-range': range(0) }, data.subarray(0, size), { keep: true });
  if (first.status !== 201) throw new Error(`POST answered ${first.status}: ${first.body}`);
  const { id } = JSON.parse(first.body);
  const statuses = await inFlight(
    parallel,
    Array.from({ length: pieces - 1 }, (_, i) => async () => {
      const off = ((i + 1) * size) % data.length;
      const res = await request('PUT', `${api}/${id}`, { ...auth, 'content-range': range(i + 1) }, data.subarray(off, off + size), { keep: true });
      if (res.status >= 300) throw new Error(`PUT answered ${res.status}: ${res.body}`);
      return res.status;
    }),
  );
  if (!statuses.includes(201)) throw new Error('no request completed the content');
  return id;
}

async function main() {
  ensureBackingServers();
  const stack = await startStack({ prefix: `benchc${Date.now().toString(36)}`, env: { LOG_LEVEL: 'warn' } });
  const content = stack.services.find((s) => s.name === 'content-service');
  try {
    const total = GIB * 1024 * MiB;
    const data = randomBytes(P);
    const owner = randomUUID();
    const auth = { authorization: `Bearer ${await new DevKeys(stack.keysDir).mint({ owners: [owner], ttlSeconds: 3600 })}` };
    const api = `${stack.gatewayUrl}/v1/${owner}/contents`;
    const parts = await timed(() => upload(api, auth, total, P, 4, data));
    const rssParts = peakRssMiB(content.pid);
    const chunks = await timed(() => upload(api, auth, total, MiB, 8, data));
    const rssChunks = peakRssMiB(content.pid);
    const check = await request('HEAD', `${api}/${chunks.value}`, auth);
    if (check.headers['x-upload-state'] !== 'ready' || Number(check.headers['content-length']) !== total) throw new Error('chunked upload did not end ready');
    console.log(`\n${GIB} GiB through the gateway`);
    console.log(`64 MiB parts, 4 in flight: ${mbps(total, parts.seconds).toFixed(0).padStart(5)} MB/s   content-service peak RSS ${rssParts.toFixed(0)} MiB`);
    console.log(`1 MiB chunks, 8 in flight: ${mbps(total, chunks.seconds).toFixed(0).padStart(5)} MB/s   content-service peak RSS ${rssChunks.toFixed(0)} MiB`);
    console.log(`ratio chunks / parts: ${(parts.seconds / chunks.seconds).toFixed(2)}`);
  } finally {
    await stack.stop();
    await purgeStackData(stack.prefix, stack.backing);
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
