// The `content` CLI uploading 1 GiB through the gateway versus an `aws s3 cp`-style multipart
// upload with @aws-sdk/lib-storage straight to the same S3 server, each as its own process:
// MB/s and each client's peak RSS; then `content upload --direct` (direct transfer is on in the
// bench's stack), the same way; then the same GiB downloaded by the CLI through the gateway, by the
// CLI with --direct, and by ranged GetObjects straight from S3, alone and hashing the file as the
// CLI does (the limit of a client that checks what it got), in rounds (median).
//   pnpm bench client [--gib 1] [--rounds 3]
const { execFileSync, spawn } = require('node:child_process');
const { randomBytes, randomUUID } = require('node:crypto');
const { mkdtempSync, openSync, writeSync, closeSync, readFileSync, rmSync } = require('node:fs');
const { tmpdir } = require('node:os');
const path = require('node:path');
const { CreateBucketCommand } = require('@aws-sdk/client-s3');
const { DevKeys } = require('@cp/credentials');
const { MiB, ensureBackingServers, s3Client, mbps, startStack, ROOT, benchArgs } = require('./_support');
const { purgeStackData } = require('../tools/devstack/purge');

const args = benchArgs();
const GIB = Number(args.gib ?? 1);
const ROUNDS = Number(args.rounds ?? 3);

/** Runs a command, sampling its peak RSS (VmHWM) and CPU seconds (user + system) until it exits. */
function measured(cmd, argv, env) {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const child = spawn(cmd, argv, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
    let peak = 0;
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    let cpu = 0;
    const sample = () => {
      try {
        const kb = Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))[1]);
        peak = Math.max(peak, kb / 1024);
        // utime and stime, in clock ticks (100 a second), as last seen before the exit.
        const fields = readFileSync(`/proc/${child.pid}/stat`, 'utf8').split(') ')[1].split(' ');
        cpu = (Number(fields[11]) + Number(fields[12])) / 100;
      } catch {
        /* exited */
      }
    };
    const timer = setInterval(sample, 20);
    child.on('exit', (code) => {
      clearInterval(timer);
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      if (code !== 0) reject(new Error(`${cmd} ${argv.join(' ')} exited ${code}: ${out}`));
      else resolve({ seconds, peakMiB: peak, cpu, out });
    });
  });
}

async function main() {
  ensureBackingServers();
  const dir = mkdtempSync(path.join(tmpdir(), 'cp-bench-client-'));
  const file = path.join(dir, 'upload.bin');
  const total = GIB * 1024 * MiB;
  const fd = openSync(file, 'w');
  const block = randomBytes(64 * MiB);
  for (let off = 0; off < total; off += block.length) writeSync(fd, block, 0, Math.min(block.length, total - off));
  closeSync(fd);
  const stack = await startStack({ prefix: `benchcli${Date.now().toString(36)}`, env: { LOG_LEVEL: 'warn' } });
  try {
    const owner = randomUUID();
    const token = await new DevKeys(stack.keysDir).mint({ owners: [owner], ttlSeconds: 3600 });
    const cli = path.join(ROOT, 'libs', 'client', 'dist', 'cli', 'main.js');
    const viaCli = await measured(
      process.execPath,
      [cli, 'upload', file, '--owner', owner, '--url', stack.gatewayUrl, '--parallel', '4', '--json'],
      {
        CONTENT_TOKEN: token,
      },
    );
    const Bucket = `${stack.prefix}-direct`;
    await s3Client().send(new CreateBucketCommand({ Bucket }));
    const direct = await measured(
      process.execPath,
      [path.join(__dirname, '_direct-upload.js'), file, Bucket, 'upload.bin'],
      {},
    );
    console.log(`\n${GIB} GiB from a file, 64 MiB parts, 4 in flight`);
    console.log(
      `content CLI via gateway: ${mbps(total, viaCli.seconds).toFixed(0).padStart(5)} MB/s   peak RSS ${viaCli.peakMiB.toFixed(0)} MiB   CPU ${viaCli.cpu.toFixed(1)} s`,
    );
    console.log(
      `lib-storage straight S3: ${mbps(total, direct.seconds).toFixed(0).padStart(5)} MB/s   peak RSS ${direct.peakMiB.toFixed(0)} MiB   CPU ${direct.cpu.toFixed(1)} s`,
    );
    console.log(`ratio CLI / direct: ${(direct.seconds / viaCli.seconds).toFixed(2)}`);
    const cliDirect = await measured(
      process.execPath,
      [cli, 'upload', file, '--direct', '--owner', owner, '--url', stack.gatewayUrl, '--parallel', '4', '--json'],
      { CONTENT_TOKEN: token },
    );
    console.log(
      `content CLI --direct:    ${mbps(total, cliDirect.seconds).toFixed(0).padStart(5)} MB/s   peak RSS ${cliDirect.peakMiB.toFixed(0)} MiB   CPU ${cliDirect.cpu.toFixed(1)} s   ratio to lib-storage ${(direct.seconds / cliDirect.seconds).toFixed(2)}`,
    );
    // Downloads of what the CLI uploaded: the CLI through the gateway, with --direct (a 307 to S3 per
    // range), and ranged GetObjects straight from S3 with the SDK, each as its own process.
    const { id } = JSON.parse(cliDirect.out);
    const cliGet = (extra) =>
      measured(
        process.execPath,
        [
          cli,
          'download',
          id,
          path.join(dir, `down${extra.length}.bin`),
          '--owner',
          owner,
          '--url',
          stack.gatewayUrl,
        ].concat(['--parallel', '4', '--json', ...extra]),
        { CONTENT_TOKEN: token },
      );
    // Rounds in turning order, each file synced out and removed before the next run: a run pays
    // neither for the one before it's writeback nor for going first.
    const s3Get = (...extra) =>
      measured(
        process.execPath,
        [path.join(__dirname, '_s3-download.js'), Bucket, 'upload.bin', path.join(dir, 'down-s3.bin'), ...extra],
        {},
      );
    const downloads = [
      ['content CLI via gateway', () => cliGet([])],
      ['content CLI --direct', () => cliGet(['--direct'])],
      ['SDK straight from S3', () => s3Get()],
      ["SDK + the CLI's digests", () => s3Get('verify')],
    ];
    const seconds = downloads.map(() => []);
    const peaks = downloads.map(() => 0);
    const cpus = downloads.map(() => []);
    for (let round = 0; round < ROUNDS; round++) {
      for (let k = 0; k < downloads.length; k++) {
        const which = (round + k) % downloads.length;
        execFileSync('sync');
        const run = await downloads[which][1]();
        seconds[which].push(run.seconds);
        cpus[which].push(run.cpu);
        peaks[which] = Math.max(peaks[which], run.peakMiB);
        for (const name of ['down0.bin', 'down1.bin', 'down-s3.bin']) rmSync(path.join(dir, name), { force: true });
      }
    }
    const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    const sdk = median(seconds[2]);
    const limit = median(seconds[3]);
    console.log(`\n${GIB} GiB to a file, 64 MiB ranges, 4 in flight, median of ${ROUNDS} rounds in turning order`);
    downloads.forEach(([name], i) =>
      console.log(
        `${name.padEnd(24)}${mbps(total, median(seconds[i])).toFixed(0).padStart(5)} MB/s   peak RSS ${peaks[i].toFixed(0)} MiB   CPU ${median(cpus[i]).toFixed(1)} s   ratio to the SDK ${(sdk / median(seconds[i])).toFixed(2)}, to SDK + digests ${(limit / median(seconds[i])).toFixed(2)}   (runs: ${seconds[i].map((t) => mbps(total, t).toFixed(0)).join(', ')} MB/s)`,
      ),
    );
  } finally {
    await stack.stop();
    await purgeStackData(stack.prefix, stack.backing);
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
