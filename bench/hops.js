// Where download time goes: 1 GiB read in 64 MiB ranges, 4 in flight, through the gateway and
// straight from the content-service, with the CPU seconds each process spent on it.
//   pnpm bench hops          (CP_BENCH_PROFILE=<dir> also writes CPU profiles of the content-service and the gateway)
const { randomBytes, randomUUID } = require('node:crypto');
const { DevKeys } = require('@cp/credentials');
const { MiB, ensureBackingServers, inFlight, timed, mbps, startStack, request } = require('./_support');
const { purgeStackData } = require('../scripts/purge');
(async () => {
  ensureBackingServers();
  const stack = await startStack({ prefix: `probe${Date.now().toString(36)}`, env: { LOG_LEVEL: 'warn' } });
  const content = stack.services.find((s) => s.name === 'content-service');
  try {
    const P = 64 * MiB, total = 16 * P, part = randomBytes(P), owner = randomUUID();
    const auth = { authorization: `Bearer ${await new DevKeys(stack.keysDir).mint({ owners: [owner] })}` };
    const api = `${stack.gatewayUrl}/v1/${owner}/contents`;
    const first = await request('POST', api, { ...auth, 'content-range': `bytes 0-${P - 1}/${total}` }, part, { keep: true });
    const { id } = JSON.parse(first.body);
    await inFlight(4, Array.from({ length: 15 }, (_, i) => () => request('PUT', `${api}/${id}`, { ...auth, 'content-range': `bytes ${(i + 1) * P}-${(i + 2) * P - 1}/${total}` }, part)));
    const fs = require('node:fs');
    const cpu = (pid) => { const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' '); return (Number(f[11]) + Number(f[12])) / 100; };
    const pids = Object.fromEntries(stack.services.map((s) => [s.name, s.pid]));
    const vgw = Number(require('node:child_process').execSync('pgrep -x versitygw').toString().trim().split('\n')[0]);
    pids.versitygw = vgw; pids.bench = process.pid;
    for (const [name, base] of [['gateway', stack.gatewayUrl], ['content', content.url], ['gateway', stack.gatewayUrl], ['content', content.url]]) {
      const before = Object.fromEntries(Object.entries(pids).map(([n, p]) => [n, cpu(p)]));
      const t = await timed(() => inFlight(4, Array.from({ length: 16 }, (_, k) => () => request('GET', `${base}/v1/${owner}/contents/${id}`, { ...auth, range: `bytes=${k * P}-${(k + 1) * P - 1}` }))));
      console.log(name, mbps(total, t.seconds).toFixed(0), 'MB/s', t.seconds.toFixed(2), 's; cpu s:', Object.entries(pids).map(([n, p]) => `${n}=${(cpu(p) - before[n]).toFixed(2)}`).join(' '));
    }
  } finally { await stack.stop();
    await purgeStackData(stack.prefix, stack.backing); }
})();
