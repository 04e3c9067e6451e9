// Certificate sign-ins of the soak: a CA and users made with openssl and registered with the
// auth-service's admin command line, then the PKCS#7 challenge-response through the gateway
// (authenticate-by-cert, the EncryptedKey opened with the user's key, approve-cert), /v1 calls with
// the auth.sid it gives, and refreshes through /sessions, in a loop.
const { execFileSync } = require('node:child_process');
const { randomUUID } = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const { ROOT } = require('../devstack/stack');
const { ContentBytes } = require('./ContentBytes');
const { json, errorIdOf } = require('./SoakHttp');

const ADMIN_CLI = path.join(ROOT, 'services', 'auth-service', 'dist', 'admin', 'cli.js');
// The client library's decryption of the challenge (pkijs, in process); `pnpm build` made it.
const { decryptEncryptedKey } = require(path.join(ROOT, 'libs', 'client', 'dist', 'EncryptedKey.js'));

const openssl = (args) => execFileSync('openssl', args, { stdio: ['ignore', 'pipe', 'pipe'] });

/** A CA trusted by the auth-service, `count` users with one owner each, and an api key. */
function registerUsers({ dir, count, adminEnv }) {
  const admin = (...a) =>
    execFileSync(process.execPath, [ADMIN_CLI, ...a], { env: adminEnv })
      .toString()
      .trim();
  fs.mkdirSync(dir, { recursive: true });
  openssl([
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '2',
    '-subj',
    '/CN=Soak CA',
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
  const apiKey = admin('apikey', 'create', '--label', 'soak');
  const users = [];
  for (let i = 0; i < count; i++) {
    const base = `${dir}/user${i}`;
    openssl([
      'req',
      '-new',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-subj',
      `/CN=soak-user-${i}`,
      '-keyout',
      `${base}.key`,
      '-out',
      `${base}.csr`,
    ]);
    openssl([
      'x509',
      '-req',
      '-in',
      `${base}.csr`,
      '-CA',
      `${dir}/ca.pem`,
      '-CAkey',
      `${dir}/ca.key`,
      '-CAcreateserial',
      '-days',
      '2',
      '-out',
      `${base}.pem`,
    ]);
    const owner = randomUUID();
    admin('user', 'add', '--user', randomUUID(), '--owner', owner, '--cert', `${base}.pem`);
    users.push({ name: `user${i}`, owner, pem: fs.readFileSync(`${base}.pem`), key: fs.readFileSync(`${base}.key`) });
  }
  return { apiKey, users };
}

/** One sign-in attempt: authenticate-by-cert, decrypt, approve-cert. { pair } or { r, step }. */
async function signInOnce(ctx, user, apiKey, { worker, idleMs = 30_000, retry = true } = {}) {
  const gw = ctx.gatewayUrl;
  const send = (o) => (retry ? ctx.http.send(o, { until: ctx.aborted }) : ctx.http.once({ ...o, idleMs }));
  const a = await send({
    method: 'POST',
    url: `${gw}/auth/v5.13/authenticate-by-cert?apiKey=${encodeURIComponent(apiKey)}`,
    body: user.pem,
    worker,
    idleMs,
  });
  if (a.status !== 200) return { r: a, step: 'authenticate-by-cert' };
  const { EncryptedKey, Link } = json(a) ?? {};
  const rnd = await decryptEncryptedKey(EncryptedKey, user.pem, user.key);
  // approve-cert is not sent again on its own: a lost answer may have used the rnd up.
  const b = await ctx.http.once({
    method: 'POST',
    url: `${Link.Href}&apiKey=${encodeURIComponent(apiKey)}`,
    headers: { 'content-type': 'application/octet-stream' },
    body: rnd,
    worker,
    idleMs,
  });
  if (b.status !== 200) return { r: b, step: 'approve-cert' };
  return { pair: json(b) };
}

/** A sign-in as a client makes it: the whole exchange again after a 5xx or a lost answer, for up to 60 s. */
async function signIn(ctx, user, apiKey, worker) {
  const started = Date.now();
  let last;
  while (Date.now() - started < 60_000 && !ctx.aborted()) {
    const res = await signInOnce(ctx, user, apiKey, { worker });
    if (res.pair) return res;
    last = res;
    const retriable = res.r.error || res.r.status >= 500 || (res.step === 'approve-cert' && res.r.status === 403);
    if (!retriable) return res;
    await new Promise((r) => setTimeout(r, 500));
  }
  return { ...last, exhausted: true };
}

/** The sign-in loop: sign in, upload and read back with the sid, refresh, check old and new sid. */
async function signInLoop(ctx) {
  const prng = ctx.prng.fork('signins');
  const worker = 'signins';
  const { apiKey, users } = ctx.signIn;
  const gw = ctx.gatewayUrl;
  for (let n = 0; ctx.trafficOn(); n++) {
    const user = users[n % users.length];
    const t0 = ctx.now();
    const failed = (step, r, detail) => {
      ctx.stats.signIns.failed.push({
        from: t0,
        to: ctx.now(),
        step,
        status: r?.status,
        error: r?.error?.message,
        errorId: r ? errorIdOf(r) : undefined,
        requestId: r?.headers?.['x-request-id'],
        detail,
      });
    };
    const s = await signIn(ctx, user, apiKey, worker);
    if (!s.pair) {
      if (!ctx.aborted()) failed(s.step, s.r, s.exhausted ? 'not signed in within 60 s' : 'refused');
      continue;
    }
    ctx.stats.signIns.ok++;
    let pair = s.pair;
    // A content sent and read back with the sid.
    const size = prng.int(1024, 64 * 1024);
    const bytes = new ContentBytes(`${ctx.seed}/signins/${n}`, size);
    const body = bytes.range(0, size - 1);
    const sid = (p) => ({ authorization: `auth.sid ${p.Sid}` });
    const up = await ctx.http.send(
      { method: 'POST', url: `${gw}/v1/${user.owner}/contents`, headers: sid(pair), body, worker },
      { until: ctx.aborted },
    );
    if (up.status === 201) {
      const id = json(up).id;
      ctx.ledger.acknowledge({
        id,
        owner: user.owner,
        token: user.token,
        bytes,
        size,
        ackAt: up.at,
        how: 'one-shot (auth.sid)',
        ranges: 1,
        large: false,
        webhook: true,
      });
      ctx.journal({
        kind: 'ack',
        id,
        owner: user.owner,
        size,
        mode: 'one-shot auth.sid',
        requestId: up.headers['x-request-id'],
      });
      const back = await ctx.http.send(
        { method: 'GET', url: `${gw}/v1/${user.owner}/contents/${id}`, headers: sid(pair), hash: true, worker },
        { until: ctx.aborted },
      );
      if (back.status === 200 && back.sha256 === bytes.sha256()) ctx.stats.signIns.sidCalls += 2;
      else if (!back.exhausted) failed('GET by auth.sid', back, `status ${back.status}`);
    } else if (!up.exhausted) failed('POST by auth.sid', up, `status ${up.status}`);

    // Refresh: the same request again after a 5xx or a lost answer (it answers the same new pair).
    const q = () =>
      `auth.sid=${pair.Sid}&refresh-token=${encodeURIComponent(pair.RefreshToken)}&api-key=${encodeURIComponent(apiKey)}`;
    const ref = await ctx.http.send(
      { method: 'POST', url: `${gw}/sessions/v5.13/sessions/refresh?${q()}`, worker },
      { until: ctx.aborted },
    );
    if (ref.status !== 200) {
      if (!ref.exhausted) failed('refresh', ref, `status ${ref.status}`);
      continue;
    }
    const old = pair;
    pair = json(ref);
    ctx.stats.signIns.refreshes++;
    const head = (p) =>
      ctx.http.send(
        { method: 'GET', url: `${gw}/v1/${user.owner}/contents?limit=1`, headers: sid(p), worker },
        { until: ctx.aborted },
      );
    const oldAnswer = await head(old);
    if (!oldAnswer.exhausted && oldAnswer.status !== 401)
      ctx.ledger.violation({
        kind: 'signIn',
        at: oldAnswer.at,
        detail: `the sid before a refresh answered ${oldAnswer.status}, not 401 (request ${oldAnswer.headers['x-request-id']})`,
      });
    const newAnswer = await head(pair);
    if (newAnswer.status === 200) ctx.stats.signIns.sidCalls++;
    else if (!newAnswer.exhausted) failed('/v1 with the refreshed sid', newAnswer, `status ${newAnswer.status}`);
    await new Promise((r) => setTimeout(r, prng.int(200, 1500)));
  }
}

module.exports = { registerUsers, signInOnce, signIn, signInLoop };
