#!/usr/bin/env node
// The container suite: the platform's images run by compose (deploy/compose.yaml with
// deploy/compose.local.yaml) and tested through the gateway's port, as a client and an operator
// would. deploy/images/test.sh builds the images, prepares .local/compose and runs it:
//   bash deploy/images/test.sh
// It needs DOCKER (the docker command), COMPOSE (the compose command) and GATEWAY_PORT in the
// environment, a Docker daemon with the images built, and openssl. It prints one line per check
// and, last, `N passed, N failed`.
'use strict';
const { spawn, spawnSync } = require('node:child_process');
const { createHash, createHmac, randomBytes, randomUUID } = require('node:crypto');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const { setTimeout: sleep } = require('node:timers/promises');
const { DevKeys } = require('@cp/credentials');

const ROOT = path.join(__dirname, '..', '..');
const GATEWAY = `http://127.0.0.1:${process.env.GATEWAY_PORT || 18080}`;
const DOCKER = process.env.DOCKER || 'docker';
const COMPOSE = (process.env.COMPOSE || `${DOCKER} compose`).split(' ');
const COMPOSE_FILES = ['-f', 'deploy/compose.yaml', '-f', 'deploy/compose.local.yaml'];
const RECEIPT_CERTIFICATE = path.join(ROOT, '.local', 'compose', 'receipt-signer.pem');
const SERVICES = ['gateway', 'content-service', 'auth-service', 'session-service'];
const BACKING = ['mongodb', 'redis', 'versitygw'];
const MiB = 1024 * 1024;
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'cp-containers-'));

// ---- running commands ----

function run(cmd, args, { input, check = true } = {}) {
  const r = spawnSync(cmd, args, { cwd: ROOT, input, encoding: 'utf8', maxBuffer: 64 * MiB });
  if (r.error) throw r.error;
  if (check && r.status !== 0)
    throw new Error(`${cmd} ${args.join(' ')} exited ${r.status}: ${(r.stderr || r.stdout).trim()}`);
  return { code: r.status, out: r.stdout.trim(), err: r.stderr.trim() };
}
const docker = (args, opts) => run(DOCKER, args, opts);
const compose = (args, opts) => run(COMPOSE[0], [...COMPOSE.slice(1), ...COMPOSE_FILES, ...args], opts);
const containerOf = (service) => compose(['ps', '--all', '-q', service]).out;
const inspect = (service, format) => docker(['inspect', '--format', format, containerOf(service)]).out;
const openssl = (args, input) => run('openssl', args, { input });

/** Compose's view of each service: { service: { state, health } }, from `ps --format json`. */
function composeStates() {
  const out = compose(['ps', '--all', '--format', 'json']).out;
  const rows = out.startsWith('[')
    ? JSON.parse(out)
    : out
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l));
  return Object.fromEntries(rows.map((r) => [r.Service, { state: r.State, health: r.Health }]));
}

async function waitHealthy(service, ms = 120_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const status = inspect(service, '{{.State.Status}} {{if .State.Health}}{{.State.Health.Status}}{{end}}');
    if (status === 'running healthy') return;
    if (Date.now() > deadline) throw new Error(`${service} is "${status}" after ${ms} ms`);
    await sleep(250);
  }
}

// ---- HTTP through the gateway ----

async function call(method, url, { headers = {}, body } = {}) {
  try {
    return await callOnce(method, url, { headers, body });
  } catch (error) {
    // A kept-alive connection to a container since stopped: a GET is sent again once, as clients do.
    if (method !== 'GET') throw error;
    await sleep(200);
    return callOnce(method, url, { headers, body });
  }
}

async function callOnce(method, url, { headers, body }) {
  const res = await fetch(url.startsWith('http') ? url : `${GATEWAY}${url}`, {
    method,
    headers,
    body,
    signal: AbortSignal.timeout(60_000),
  });
  const data = Buffer.from(await res.arrayBuffer());
  return { status: res.status, headers: res.headers, body: data, json: () => JSON.parse(data.toString()) };
}

/** A request whose body is sent in `pieces` pieces, `gapMs` apart: a request that stays in flight. */
function slowCall(method, urlPath, headers, body, pieces, gapMs) {
  return new Promise((resolve) => {
    const req = http.request(
      `${GATEWAY}${urlPath}`,
      { method, headers: { ...headers, 'content-length': String(body.length) } },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(chunks) }));
        res.on('error', (error) => resolve({ status: 0, error }));
      },
    );
    req.on('error', (error) => resolve({ status: 0, error }));
    const size = Math.ceil(body.length / pieces);
    (async () => {
      for (let at = 0; at < body.length; at += size) {
        if (req.destroyed) return;
        req.write(body.subarray(at, at + size));
        await sleep(gapMs);
      }
      req.end();
    })();
  });
}

const sha256 = (buf) => createHash('sha256').update(buf).digest('hex');
const contentUrl = (owner, id) => `/v1/${owner}/contents${id ? `/${id}` : ''}`;

/** One range of `data`: POST (no id yet) or PUT. */
function sendRange(owner, id, data, start, end, auth) {
  return call(id ? 'PUT' : 'POST', contentUrl(owner, id), {
    headers: { ...auth, 'content-range': `bytes ${start}-${end - 1}/${data.length}` },
    body: data.subarray(start, end),
  });
}

/** Sends a range again until it is acknowledged (5xx and refused connections are retried), as a resuming client does. */
async function sendRangeUntilStored(owner, id, data, start, end, auth, ms = 120_000) {
  const deadline = Date.now() + ms;
  let last;
  for (;;) {
    try {
      last = await sendRange(owner, id, data, start, end, auth);
      if (last.status < 500) return last;
    } catch (error) {
      last = { status: 0, error };
    }
    if (Date.now() > deadline) throw new Error(`range ${start}-${end} not stored within ${ms} ms: ${last.status}`);
    await sleep(500);
  }
}

// ---- the checks ----

const checks = [];
const check = (name, fn) => checks.push({ name, fn });
/** Contents answered 201 as complete: each must read back the same after kills, stops and down/up. */
const finished = [];
const ctx = {};

function assert(condition, message) {
  if (!condition) throw new Error(message);
}

async function readBack(owner, id, auth) {
  const got = await call('GET', contentUrl(owner, id), { headers: auth });
  assert(got.status === 200, `GET ${id} answered ${got.status}`);
  return got.body;
}

check('compose up: every container healthy by its own healthcheck', async () => {
  const t = Date.now();
  compose(['up', '-d', '--no-build', '--wait']);
  const states = composeStates();
  for (const s of [...SERVICES, ...BACKING])
    assert(states[s]?.state === 'running' && states[s]?.health === 'healthy', `${s}: ${JSON.stringify(states[s])}`);
  ctx.up = true;
  console.log(`    up and healthy in ${((Date.now() - t) / 1000).toFixed(1)} s`);
  console.log(compose(['ps', '--format', 'table {{.Service}}\t{{.Image}}\t{{.Status}}']).out.replace(/^/gm, '    '));
});

check('every container runs as uid 1000 on a read-only root filesystem with a writable /tmp', async () => {
  for (const s of [...SERVICES, ...BACKING]) {
    assert(inspect(s, '{{.Config.User}}') === '1000:1000', `${s}: user ${inspect(s, '{{.Config.User}}')}`);
    assert(inspect(s, '{{.HostConfig.ReadonlyRootfs}}') === 'true', `${s}: root filesystem not read-only`);
    const c = containerOf(s);
    const uid = docker(['exec', c, 'sh', '-c', "awk '/^Uid:/ { print $2 }' /proc/1/status"]).out;
    assert(uid === '1000', `${s}: its process runs as uid ${uid}`);
    const write = docker(['exec', c, 'sh', '-c', 'touch /probe'], { check: false });
    assert(write.code !== 0 && /read-only/i.test(write.err), `${s}: / is writable (${write.err})`);
    docker(['exec', c, 'sh', '-c', 'touch /tmp/probe && rm /tmp/probe']);
  }
  console.log(`    ${SERVICES.length + BACKING.length} containers: uid 1000, / read-only, /tmp writable`);
});

check('no package manager in the runtime images; their sizes', async () => {
  const sizes = [];
  for (const s of [...SERVICES, ...BACKING]) {
    const found = docker(
      [
        'exec',
        containerOf(s),
        'sh',
        '-c',
        'for c in apt apt-get dpkg dpkg-deb npm npx corepack yarn pnpm; do command -v $c; done; ls -d /usr/lib/apt /usr/lib/dpkg /usr/local/lib/node_modules/npm 2>/dev/null; true',
      ],
      { check: false },
    ).out;
    assert(found === '', `${s} has ${found.split('\n').join(', ')}`);
    const image = inspect(s, '{{.Config.Image}}');
    sizes.push(
      `${image} ${(Number(docker(['image', 'inspect', '--format', '{{.Size}}', image]).out) / 1e6).toFixed(1)} MB`,
    );
  }
  for (const line of sizes) console.log(`    ${line}`);
});

check('signs in by certificate (authenticate-by-cert, openssl cms -decrypt, approve-cert) and refreshes', async () => {
  // A CA of the suite's own, trusted by the auth-service's admin command run inside its container.
  const ca = path.join(work, 'ca');
  openssl(
    ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-sha256', '-days', '2', '-subj', '/CN=Containers CA']
      .concat(['-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign'])
      .concat(['-keyout', `${ca}.key`, '-out', `${ca}.pem`]),
  );
  const user = path.join(work, 'user');
  openssl([
    'req',
    '-new',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-subj',
    '/CN=containers-user',
    '-keyout',
    `${user}.key`,
    '-out',
    `${user}.csr`,
  ]);
  openssl([
    'x509',
    '-req',
    '-in',
    `${user}.csr`,
    '-CA',
    `${ca}.pem`,
    '-CAkey',
    `${ca}.key`,
    '-CAcreateserial',
    '-days',
    '2',
    '-sha256',
    '-out',
    `${user}.pem`,
  ]);
  const admin = (args, input) =>
    compose(['exec', '-T', 'auth-service', 'node', 'dist/admin/cli.js', ...args], { input }).out;
  admin(['trust', 'add', '--cert', '/dev/stdin'], fs.readFileSync(`${ca}.pem`, 'utf8'));
  const owner = randomUUID();
  admin(
    ['user', 'add', '--user', randomUUID(), '--owner', owner, '--cert', '/dev/stdin'],
    fs.readFileSync(`${user}.pem`, 'utf8'),
  );
  const apiKey = admin(['apikey', 'create', '--label', 'containers']).split('\n').pop().trim();

  const auth = await call('POST', `/auth/v5.13/authenticate-by-cert?apiKey=${encodeURIComponent(apiKey)}`, {
    body: fs.readFileSync(`${user}.pem`),
  });
  assert(auth.status === 200, `authenticate-by-cert answered ${auth.status}: ${auth.body}`);
  const { EncryptedKey, Link } = auth.json();
  const rnd = opensslBinary(
    ['cms', '-decrypt', '-inform', 'DER', '-recip', `${user}.pem`, '-inkey', `${user}.key`, '-binary'],
    Buffer.from(EncryptedKey, 'base64'),
  );
  assert(Link.Href.startsWith(GATEWAY), `approve link ${Link.Href} is not the gateway's`);
  const approved = await call('POST', `${Link.Href}&apiKey=${encodeURIComponent(apiKey)}`, {
    headers: { 'content-type': 'application/octet-stream' },
    body: rnd,
  });
  assert(approved.status === 200, `approve-cert answered ${approved.status}: ${approved.body}`);
  const first = approved.json();
  const refreshed = await call(
    'POST',
    `/sessions/v5.13/sessions/refresh?auth.sid=${first.Sid}&refresh-token=${first.RefreshToken}&api-key=${encodeURIComponent(apiKey)}`,
  );
  assert(refreshed.status === 200, `refresh answered ${refreshed.status}: ${refreshed.body}`);
  const pair = refreshed.json();
  assert(pair.Sid && pair.Sid !== first.Sid, 'refresh gave no new sid');
  const list = await call('GET', `${contentUrl(owner)}?limit=1`, {
    headers: { authorization: `auth.sid ${pair.Sid}` },
  });
  assert(list.status === 200, `GET with the new sid answered ${list.status}`);
  const old = await call('GET', `${contentUrl(owner)}?limit=1`, {
    headers: { authorization: `auth.sid ${first.Sid}` },
  });
  assert(old.status === 401, `GET with the refreshed-away sid answered ${old.status}`);
  ctx.owner = owner;
  ctx.sid = { authorization: `auth.sid ${pair.Sid}` };
  // A token from the dev key whose JWKS compose mounts into the content-service: for the rest.
  ctx.bearer = {
    authorization: `Bearer ${await new DevKeys(path.join(ROOT, '.local', 'dev-keys')).mint({ owners: [owner], ttlSeconds: 3600 })}`,
  };
});

/** openssl with binary input and output (run() decodes its output as text). */
function opensslBinary(args, input) {
  const r = spawnSync('openssl', args, { input, maxBuffer: 64 * MiB });
  if (r.status !== 0) throw new Error(`openssl ${args[0]} exited ${r.status}: ${r.stderr}`);
  return r.stdout;
}

check('stores a content sent in parts out of order and reads it back by range', async () => {
  const data = randomBytes(3 * MiB + 12345);
  const chunks = [2, 0, 3, 1].map((k) => [k * MiB, Math.min((k + 1) * MiB, data.length)]);
  const [s0, e0] = chunks[0];
  const created = await sendRange(ctx.owner, null, data, s0, e0, ctx.sid);
  assert(created.status === 201, `POST of the first range answered ${created.status}: ${created.body}`);
  const { id } = created.json();
  for (const [i, [s, e]] of chunks.slice(1).entries()) {
    const r = await sendRange(ctx.owner, id, data, s, e, ctx.sid);
    const last = i === chunks.length - 2;
    assert(r.status === (last ? 201 : 200), `PUT ${s}-${e - 1} answered ${r.status}: ${r.body}`);
    assert(r.json()['is-completed'] === last, `PUT ${s}-${e - 1}: is-completed ${r.json()['is-completed']}`);
  }
  const ranged = await call('GET', contentUrl(ctx.owner, id), {
    headers: { ...ctx.sid, range: 'bytes=1048000-2097999' },
  });
  assert(ranged.status === 206, `ranged GET answered ${ranged.status}`);
  assert(
    ranged.headers.get('content-range') === `bytes 1048000-2097999/${data.length}`,
    `Content-Range ${ranged.headers.get('content-range')}`,
  );
  assert(ranged.body.equals(data.subarray(1048000, 2098000)), 'the range read back differs');
  const tail = await call('GET', contentUrl(ctx.owner, id), { headers: { ...ctx.sid, range: 'bytes=-100' } });
  assert(tail.status === 206 && tail.body.equals(data.subarray(data.length - 100)), 'the last 100 bytes differ');
  assert(sha256(await readBack(ctx.owner, id, ctx.sid)) === sha256(data), 'the content read back differs');
  finished.push({ id, sha256: sha256(data), size: data.length });
});

check('stores a one-shot POST with its Content-Digest and refuses a wrong one', async () => {
  const data = randomBytes(200 * 1024);
  const digest = `sha-256=:${createHash('sha256').update(data).digest('base64')}:`;
  const wrong = await call('POST', contentUrl(ctx.owner), {
    headers: { ...ctx.bearer, 'content-digest': `sha-256=:${createHash('sha256').update('x').digest('base64')}:` },
    body: data,
  });
  assert(wrong.status === 400, `a wrong Content-Digest answered ${wrong.status}`);
  const r = await call('POST', contentUrl(ctx.owner), {
    headers: { ...ctx.bearer, 'content-digest': digest },
    body: data,
  });
  assert(r.status === 201, `POST answered ${r.status}: ${r.body}`);
  const { id } = r.json();
  const got = await call('GET', contentUrl(ctx.owner, id), { headers: ctx.bearer });
  assert(got.status === 200 && got.body.equals(data), 'the content read back differs');
  assert((got.headers.get('repr-digest') ?? '').includes(digest), `Repr-Digest ${got.headers.get('repr-digest')}`);
  finished.push({ id, sha256: sha256(data), size: data.length });
  ctx.oneShot = id;
  ctx.oneShotDigest = createHash('sha256').update(data).digest('base64');
});

check('signs a receipt that openssl cms -verify accepts against the receipt certificate', async () => {
  const r = await call('GET', `${contentUrl(ctx.owner, ctx.oneShot)}/receipt`, { headers: ctx.bearer });
  assert(r.status === 200, `receipt answered ${r.status}: ${r.body}`);
  assert(
    r.headers.get('content-type')?.startsWith('application/pkcs7-mime'),
    `Content-Type ${r.headers.get('content-type')}`,
  );
  const doc = JSON.parse(
    opensslBinary(
      ['cms', '-verify', '-inform', 'DER', '-CAfile', RECEIPT_CERTIFICATE, '-purpose', 'any'],
      r.body,
    ).toString(),
  );
  assert(
    doc['content-id'] === ctx.oneShot && doc.size === 200 * 1024 && doc.digests?.['sha-256'] === ctx.oneShotDigest,
    `the receipt says ${JSON.stringify(doc)}`,
  );
});

check('delivers a signed webhook to a receiver on 127.0.0.1', async () => {
  const received = [];
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString() });
      res.end();
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  try {
    const url = `http://127.0.0.1:${server.address().port}/hook`;
    const hook = await call('POST', `/v1/${ctx.owner}/webhooks`, {
      headers: { ...ctx.bearer, 'content-type': 'application/json' },
      body: JSON.stringify({ url, events: ['content.completed'] }),
    });
    assert(hook.status === 201, `POST webhooks answered ${hook.status}: ${hook.body}`);
    const { secret } = hook.json();
    const data = randomBytes(1000);
    const up = await call('POST', contentUrl(ctx.owner), { headers: ctx.bearer, body: data });
    assert(up.status === 201, `POST answered ${up.status}`);
    const { id } = up.json();
    finished.push({ id, sha256: sha256(data), size: data.length });
    const deadline = Date.now() + 30_000;
    let delivery;
    while (!(delivery = received.find((d) => JSON.parse(d.body).content?.id === id))) {
      assert(Date.now() < deadline, `no delivery within 30 s (${received.length} received)`);
      await sleep(100);
    }
    const event = JSON.parse(delivery.body);
    assert(event.type === 'content.completed' && event.owner === ctx.owner, `event ${delivery.body}`);
    const ts = delivery.headers['webhook-timestamp'];
    const mac = createHmac('sha256', secret).update(`${ts}.`).update(delivery.body).digest('hex');
    assert(delivery.headers['webhook-signature'] === `v1=${mac}`, 'the signature does not verify');
  } finally {
    server.close();
  }
});

/**
 * A content of 8 chunks of 1 MiB: 4 stored, the 5th in flight when `interrupt` runs; then every
 * range is sent again until stored. Returns what the client saw of the interrupted request.
 */
async function uploadAcross(interrupt, label) {
  const data = randomBytes(8 * MiB);
  const created = await sendRange(ctx.owner, null, data, 0, MiB, ctx.bearer);
  assert(created.status === 201, `POST answered ${created.status}`);
  const { id } = created.json();
  for (let k = 1; k < 4; k++) {
    const r = await sendRange(ctx.owner, id, data, k * MiB, (k + 1) * MiB, ctx.bearer);
    assert(r.status === 200, `PUT ${k} answered ${r.status}`);
  }
  const t = Date.now();
  const inFlight = slowCall(
    'PUT',
    contentUrl(ctx.owner, id),
    { ...ctx.bearer, 'content-range': `bytes ${4 * MiB}-${5 * MiB - 1}/${data.length}` },
    data.subarray(4 * MiB, 5 * MiB),
    16,
    250,
  );
  await sleep(1000);
  await interrupt();
  const seen = await inFlight;
  let completed;
  for (let k = 4; k < 8; k++)
    completed = await sendRangeUntilStored(ctx.owner, id, data, k * MiB, (k + 1) * MiB, ctx.bearer);
  assert(
    completed.status === 201 && completed.json()['is-completed'] === true,
    `last range answered ${completed.status}`,
  );
  assert(sha256(await readBack(ctx.owner, id, ctx.bearer)) === sha256(data), 'the content read back differs');
  finished.push({ id, sha256: sha256(data), size: data.length });
  console.log(
    `    ${label}: the request in flight got ${seen.status || seen.error?.code}; the content completed ${((Date.now() - t) / 1000).toFixed(1)} s after, SHA-256 identical`,
  );
  return seen;
}

check(
  'content-service crashes mid-upload (its process killed): restart: unless-stopped brings it back, the upload completes',
  async () => {
    const before = Number(inspect('content-service', '{{.RestartCount}}'));
    await uploadAcross(async () => {
      // The container's process killed from outside, as a crash or the OOM killer would.
      process.kill(Number(inspect('content-service', '{{.State.Pid}}')), 'SIGKILL');
      await sleep(1000);
      await waitHealthy('content-service');
    }, 'kill -9');
    const after = Number(inspect('content-service', '{{.RestartCount}}'));
    assert(after === before + 1, `restart count ${before} -> ${after}`);
  },
);

check('docker kill of the content-service mid-upload, then docker start: the upload completes', async () => {
  await uploadAcross(async () => {
    docker(['kill', containerOf('content-service')]);
    // docker kill counts as stopped by hand: the restart policy leaves it stopped.
    await sleep(2000);
    assert(inspect('content-service', '{{.State.Status}}') === 'exited', 'docker kill: the container was restarted');
    docker(['start', containerOf('content-service')]);
    await waitHealthy('content-service');
  }, 'docker kill');
});

check(
  'docker stop during an upload: the part in flight completes (SIGTERM drain) and the process exits 0',
  async () => {
    let stopSeconds;
    const seen = await uploadAcross(async () => {
      const c = containerOf('content-service');
      const t = Date.now();
      await new Promise((resolve, reject) => {
        const p = spawn(DOCKER, ['stop', c], { stdio: 'ignore' });
        p.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`docker stop exited ${code}`))));
      });
      stopSeconds = (Date.now() - t) / 1000;
      const exit = inspect('content-service', '{{.State.ExitCode}}');
      assert(exit === '0', `the content-service exited ${exit}`);
      docker(['start', c]);
      await waitHealthy('content-service');
    }, 'docker stop');
    assert(seen.status === 200, `the part in flight at docker stop answered ${seen.status || seen.error?.code}`);
    console.log(`    docker stop returned after ${stopSeconds.toFixed(1)} s`);
  },
);

check('compose down and up again: every finished content is still there, and the session too', async () => {
  const t = Date.now();
  compose(['down']);
  compose(['up', '-d', '--no-build', '--wait']);
  console.log(`    down and up in ${((Date.now() - t) / 1000).toFixed(1)} s`);
  let intact = 0;
  for (const f of finished) if (sha256(await readBack(ctx.owner, f.id, ctx.bearer)) === f.sha256) intact++;
  console.log(`    ${intact} of ${finished.length} finished contents intact (SHA-256)`);
  assert(intact === finished.length, `${finished.length - intact} contents lost or changed`);
  const list = await call('GET', `${contentUrl(ctx.owner)}?limit=1`, { headers: ctx.sid });
  assert(list.status === 200, `the session after down/up: ${list.status}`);
});

async function main() {
  let passed = 0;
  let failed = 0;
  for (const { name, fn } of checks) {
    const t = Date.now();
    if (failed > 0 && !ctx.up) {
      failed++;
      console.log(`FAIL ${name} (not run: compose did not come up)`);
      continue;
    }
    try {
      await fn();
      passed++;
      console.log(`ok   ${name} (${((Date.now() - t) / 1000).toFixed(1)} s)`);
    } catch (error) {
      failed++;
      console.log(`FAIL ${name} (${((Date.now() - t) / 1000).toFixed(1)} s)\n    ${error.stack || error}`);
    }
  }
  fs.rmSync(work, { recursive: true, force: true });
  console.log(`${passed} passed, ${failed} failed`);
  process.exitCode = failed === 0 ? 0 : 1;
}

main();
