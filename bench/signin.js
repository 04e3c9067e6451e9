// Certificate sign-in, session refresh, and content requests authorised by auth.sid versus by
// Bearer, through the gateway of a fresh local stack, in one run.
//   pnpm bench signin [--seconds 10] [--in-flight 8] [--requests 4000] [--openssl]
// A full sign-in is authenticate-by-cert + decrypting EncryptedKey (in process with the platform's
// client library, @cp/client, or with the `openssl cms` command when --openssl is given) + approve-cert.
const { execFileSync } = require('node:child_process');
const { randomBytes, randomUUID } = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { DevKeys } = require('@cp/credentials');
const { ensureBackingServers, inFlight, startStack, request, ROOT, benchArgs } = require('./_support');
const { purgeStackData } = require('../tools/devstack/purge');

const args = benchArgs();
const SECONDS = Number(args.seconds ?? 10);
const IN_FLIGHT = Number(args['in-flight'] ?? 8);
const REQUESTS = Number(args.requests ?? 4000);
const USE_OPENSSL = 'openssl' in args;

const { decryptEncryptedKey } = require('../libs/client/dist/EncryptedKey');

const openssl = (a, input) => execFileSync('openssl', a, { input, stdio: [input ? 'pipe' : 'ignore', 'pipe', 'pipe'] });

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

function summary(name, latenciesMs, seconds) {
  const s = [...latenciesMs].sort((a, b) => a - b);
  const row = { name, count: s.length, perSecond: s.length / seconds, p50: percentile(s, 50), p99: percentile(s, 99) };
  process.stdout.write(
    `${name.padEnd(34)} ${String(row.count).padStart(6)} in ${seconds.toFixed(1)} s  ${row.perSecond.toFixed(1).padStart(8)}/s   p50 ${row.p50.toFixed(2).padStart(7)} ms   p99 ${row.p99.toFixed(2).padStart(7)} ms\n`,
  );
  return row;
}

/** Runs `op` on `workers` loops for `seconds`, timing each call. */
async function forDuration(workers, seconds, op) {
  const latencies = [];
  const until = performance.now() + seconds * 1000;
  const started = performance.now();
  await Promise.all(
    workers.map(async (w) => {
      while (performance.now() < until) {
        const t = performance.now();
        await op(w);
        latencies.push(performance.now() - t);
      }
    }),
  );
  return { latencies, seconds: (performance.now() - started) / 1000 };
}

async function decrypt(encryptedKeyB64, user) {
  const der = Buffer.from(encryptedKeyB64, 'base64');
  if (USE_OPENSSL)
    return openssl(
      ['cms', '-decrypt', '-inform', 'DER', '-recip', user.certPath, '-inkey', user.keyPath, '-binary'],
      der,
    );
  return decryptEncryptedKey(encryptedKeyB64, user.pem, user.keyPem);
}

async function main() {
  ensureBackingServers();
  const prefix = `bench${Date.now().toString(36)}`;
  const stack = await startStack({ prefix, env: { LOG_LEVEL: 'warn' } });
  const env = { ...process.env, MONGODB_URL: stack.backing.MONGODB_URL, MONGODB_DATABASE: stack.authDatabase };
  const admin = (...a) =>
    execFileSync(process.execPath, [path.join(ROOT, 'services/auth-service/dist/admin/cli.js'), ...a], { env })
      .toString()
      .trim();
  try {
    // One CA, one RSA-2048 user per worker (one rnd per user: workers must not share a user).
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cp-bench-signin-'));
    openssl([
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      '2',
      '-subj',
      '/CN=Bench CA',
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign',
      '-keyout',
      `${dir}/ca.key`,
      '-out',
      `${dir}/ca.pem`,
    ]);
    admin('trust', 'add', '--cert', `${dir}/ca.pem`);
    const apiKey = admin('apikey', 'create', '--label', 'bench');
    const users = [];
    for (let i = 0; i < IN_FLIGHT; i++) {
      const keyPath = `${dir}/u${i}.key`;
      const certPath = `${dir}/u${i}.pem`;
      openssl([
        'req',
        '-new',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-subj',
        `/CN=bench-user-${i}`,
        '-keyout',
        keyPath,
        '-out',
        `${dir}/u${i}.csr`,
      ]);
      openssl([
        'x509',
        '-req',
        '-in',
        `${dir}/u${i}.csr`,
        '-CA',
        `${dir}/ca.pem`,
        '-CAkey',
        `${dir}/ca.key`,
        '-CAcreateserial',
        '-days',
        '2',
        '-out',
        certPath,
      ]);
      const owner = randomUUID();
      admin('user', 'add', '--user', randomUUID(), '--owner', owner, '--cert', certPath);
      users.push({ certPath, keyPath, pem: fs.readFileSync(certPath), keyPem: fs.readFileSync(keyPath), owner });
    }
    const gw = stack.gatewayUrl;
    const signIn = async (user) => {
      const a = await request('POST', `${gw}/auth/v5.13/authenticate-by-cert?apiKey=${apiKey}`, {}, user.pem, {
        keep: true,
      });
      if (a.status !== 200) throw new Error(`authenticate answered ${a.status}: ${a.body}`);
      const { EncryptedKey, Link } = JSON.parse(a.body);
      const rnd = await decrypt(EncryptedKey, user);
      const b = await request(
        'POST',
        `${Link.Href}&apiKey=${apiKey}`,
        { 'content-type': 'application/octet-stream' },
        rnd,
        { keep: true },
      );
      if (b.status !== 200) throw new Error(`approve answered ${b.status}: ${b.body}`);
      return JSON.parse(b.body);
    };

    process.stdout.write(
      `\nsign-in benchmark: ${IN_FLIGHT} in flight, ${SECONDS} s per phase, decrypt with ${USE_OPENSSL ? 'openssl cms' : '@cp/client in process'}\n\n`,
    );
    await Promise.all(users.map(signIn)); // warm-up
    const signIns = await forDuration(users, SECONDS, async (u) => {
      u.pair = await signIn(u);
    });
    const signInRow = summary('full sign-in', signIns.latencies, signIns.seconds);

    const refreshes = await forDuration(users, SECONDS, async (u) => {
      const r = await request(
        'POST',
        `${gw}/sessions/v5.13/sessions/refresh?auth.sid=${u.pair.Sid}&refresh-token=${u.pair.RefreshToken}&api-key=${apiKey}`,
        {},
        null,
        { keep: true },
      );
      if (r.status !== 200) throw new Error(`refresh answered ${r.status}: ${r.body}`);
      u.pair = JSON.parse(r.body);
    });
    const refreshRow = summary('refresh', refreshes.latencies, refreshes.seconds);

    // Content requests: a 1 KiB content per user, downloaded with auth.sid or with Bearer.
    const keys = new DevKeys(stack.keysDir);
    for (const u of users) {
      u.token = await keys.mint({ owners: [u.owner], ttlSeconds: 3600 });
      const up = await request(
        'POST',
        `${gw}/v1/${u.owner}/contents`,
        { authorization: `Bearer ${u.token}` },
        randomBytes(1024),
        { keep: true },
      );
      if (up.status !== 201) throw new Error(`upload answered ${up.status}`);
      u.contentId = JSON.parse(up.body).id;
    }
    const get = (scheme) => async (i) => {
      const u = users[i % users.length];
      const t = performance.now();
      const res = await request('GET', `${gw}/v1/${u.owner}/contents/${u.contentId}`, {
        authorization: scheme === 'sid' ? `auth.sid ${u.pair.Sid}` : `Bearer ${u.token}`,
      });
      if (res.status !== 200) throw new Error(`GET with ${scheme} answered ${res.status}`);
      return performance.now() - t;
    };
    const run = async (scheme, n) => {
      const started = performance.now();
      const latencies = await inFlight(
        IN_FLIGHT,
        Array.from({ length: n }, (_, i) => () => get(scheme)(i)),
      );
      return { latencies, seconds: (performance.now() - started) / 1000 };
    };
    await run('sid', 500);
    await run('bearer', 500);
    // Alternate rounds so that drift in the machine's load hits both alike.
    const all = { sid: { latencies: [], seconds: 0 }, bearer: { latencies: [], seconds: 0 } };
    for (let round = 0; round < 4; round++) {
      for (const scheme of round % 2 ? ['bearer', 'sid'] : ['sid', 'bearer']) {
        const r = await run(scheme, REQUESTS / 4);
        all[scheme].latencies.push(...r.latencies);
        all[scheme].seconds += r.seconds;
      }
    }
    const sidRow = summary('content GET, Authorization: auth.sid', all.sid.latencies, all.sid.seconds);
    const bearerRow = summary('content GET, Authorization: Bearer', all.bearer.latencies, all.bearer.seconds);
    process.stdout.write(
      `\nauth.sid vs Bearer: throughput ratio ${(sidRow.perSecond / bearerRow.perSecond).toFixed(2)}, ` +
        `p50 ${signed(sidRow.p50 - bearerRow.p50)} ms, p99 ${signed(sidRow.p99 - bearerRow.p99)} ms ` +
        `(target: a cached auth.sid check adds at most 1 ms p99)\n`,
    );
    return { signInRow, refreshRow, sidRow, bearerRow };
  } finally {
    await stack.stop();
    await purgeStackData(stack.prefix, stack.backing);
  }
}

main().then(
  () => process.exit(0),
  (error) => {
    process.stderr.write(`bench signin: ${error.stack || error}\n`);
    process.exit(1);
  },
);

function signed(ms) {
  return `${ms >= 0 ? '+' : '-'}${Math.abs(ms).toFixed(2)}`;
}
