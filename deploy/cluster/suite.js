#!/usr/bin/env node
// The cluster suite: the local overlay on this machine's one-node cluster (deploy/cluster/up.sh),
// tested as an operator and a client would, through the edge (Traefik) over HTTPS. Run by
// deploy/cluster/test.sh, which passes KUBECTL, CTR, EDGE_URL, EDGE_HOST and WORK in the
// environment. One line per check with its figures, then `N passed, N failed`.
'use strict';
const { spawn, spawnSync } = require('node:child_process');
const { createHash, randomBytes, randomUUID } = require('node:crypto');
const fs = require('node:fs');
const https = require('node:https');
const os = require('node:os');
const path = require('node:path');
const { setTimeout: sleep } = require('node:timers/promises');
const { DevKeys } = require('@cp/credentials');

const ROOT = path.join(__dirname, '..', '..');
const NS = 'content-platform';
const KUBECTL = (process.env.KUBECTL || 'kubectl').split(' ');
const CTR = (process.env.CTR || 'ctr').split(' ');
const EDGE = new URL(process.env.EDGE_URL || 'https://127.0.0.1:16444');
const EDGE_HOST = process.env.EDGE_HOST || 'content.localtest.me';
const SERVICES = ['gateway', 'content-service', 'auth-service', 'session-service'];
const BACKING = ['mongodb', 'redis', 'versitygw'];
const MiB = 1024 * 1024;
/** The fault suite's bound on an upload's recovery after its content-service is killed. */
const RECOVERY_BOUND_MS = 15_000;
const work = fs.mkdtempSync(path.join(process.env.WORK || os.tmpdir(), 'cp-cluster-'));

// ---- commands ----

function run(cmd, args, { input, check = true } = {}) {
  const r = spawnSync(cmd, args, { cwd: ROOT, input, encoding: 'utf8', maxBuffer: 64 * MiB });
  if (r.error) throw r.error;
  if (check && r.status !== 0)
    throw new Error(`${cmd} ${args.join(' ')} exited ${r.status}: ${(r.stderr || r.stdout).trim()}`);
  return { code: r.status, out: r.stdout.trim(), err: r.stderr.trim() };
}
const kubectl = (args, opts) => run(KUBECTL[0], [...KUBECTL.slice(1), ...args], opts);
const k = (args, opts) => kubectl(['-n', NS, ...args], opts);
const getJson = (args) => JSON.parse(k([...args, '-o', 'json']).out);
const openssl = (args, input) => run('openssl', args, { input });
function opensslBinary(args, input) {
  const r = spawnSync('openssl', args, { input, maxBuffer: 64 * MiB });
  if (r.status !== 0) throw new Error(`openssl ${args[0]} exited ${r.status}: ${r.stderr}`);
  return r.stdout;
}

/** The running pods of a Deployment (not terminating). */
function podsOf(name) {
  return getJson(['get', 'pods', '-l', `app.kubernetes.io/name=${name}`]).items.filter(
    (p) => !p.metadata.deletionTimestamp && p.status.phase === 'Running',
  );
}
const readyReplicas = (name) => getJson(['get', 'deployment', name]).status.readyReplicas ?? 0;

async function waitFor(what, fn, ms, everyMs = 1000) {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await fn()) return;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms / 1000} s`);
    await sleep(everyMs);
  }
}

/** The host PID of a pod's first container (containerd's task). */
function containerPid(pod) {
  const id = pod.status.containerStatuses[0].containerID.replace(/^containerd:\/\//, '');
  const row = run(CTR[0], [...CTR.slice(1), 'tasks', 'ls'])
    .out.split('\n')
    .find((l) => l.startsWith(`${id} `));
  if (!row) throw new Error(`no task for container ${id}`);
  return Number(row.split(/\s+/)[1]);
}
const uidOf = (pid) => fs.readFileSync(`/proc/${pid}/status`, 'utf8').match(/^Uid:\s+(\d+)/m)[1];

// ---- HTTPS through the edge ----

let agent;
/** Trusts the certificate create-secrets.sh made for the edge, and nothing else. */
function edgeAgent() {
  const secret = getJson(['get', 'secret', 'content-platform-tls']);
  const ca = Buffer.from(secret.data['tls.crt'], 'base64');
  agent = new https.Agent({ keepAlive: true, maxSockets: 64, ca, servername: EDGE_HOST });
}

/** One request to the edge: { status, headers, body }; a refused or reset connection throws. */
function call(method, urlPath, { headers = {}, body } = {}) {
  return new Promise((resolve, reject) => {
    const req = https.request(
      {
        host: EDGE.hostname,
        port: EDGE.port,
        path: urlPath,
        method,
        agent,
        servername: EDGE_HOST,
        headers: { host: `${EDGE_HOST}:${EDGE.port}`, ...headers, 'content-length': String(body?.length ?? 0) },
        timeout: 120_000,
      },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => {
          const data = Buffer.concat(chunks);
          resolve({
            status: res.statusCode,
            headers: res.headers,
            body: data,
            json: () => JSON.parse(data.toString()),
          });
        });
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    req.end(body);
  });
}

/** CRC-64/NVME (reflected polynomial 0x9a6c9329ac4bc9b5), big-endian bytes as S3 gives it. */
const CRC64_TABLE = (() => {
  const poly = 0x9a6c9329ac4bc9b5n;
  return Array.from({ length: 256 }, (_, n) => {
    let c = BigInt(n);
    for (let i = 0; i < 8; i++) c = c & 1n ? (c >> 1n) ^ poly : c >> 1n;
    return c;
  });
})();
function crc64nvme(buf) {
  // Two 32-bit halves: BigInt per byte would take seconds for a few MiB.
  const lo = new Uint32Array(256);
  const hi = new Uint32Array(256);
  CRC64_TABLE.forEach((v, i) => {
    lo[i] = Number(v & 0xffffffffn);
    hi[i] = Number(v >> 32n);
  });
  let l = 0xffffffff;
  let h = 0xffffffff;
  for (let i = 0; i < buf.length; i++) {
    const idx = (l ^ buf[i]) & 0xff;
    l = ((l >>> 8) | ((h & 0xff) << 24)) ^ lo[idx];
    h = (h >>> 8) ^ hi[idx];
  }
  const out = Buffer.alloc(8);
  out.writeUInt32BE((h ^ 0xffffffff) >>> 0, 0);
  out.writeUInt32BE((l ^ 0xffffffff) >>> 0, 4);
  return out;
}
const sha256 = (buf) => createHash('sha256').update(buf).digest('hex');
const contentUrl = (owner, id) => `/v1/${owner}/contents${id ? `/${id}` : ''}`;
function sendRange(owner, id, data, start, end, auth) {
  return call(id ? 'PUT' : 'POST', contentUrl(owner, id), {
    headers: { ...auth, 'content-range': `bytes ${start}-${end - 1}/${data.length}` },
    body: data.subarray(start, end),
  });
}

// ---- the checks ----

const checks = [];
const check = (name, fn) => checks.push({ name, fn });
/** Thrown by a check that this cluster cannot hold to account: counted and printed as not checked, never as passed. */
class NotCheckable extends Error {}
const ctx = {};
/** Contents acknowledged complete (201): each must read back the same at the end. */
const finished = [];

function assert(condition, message) {
  if (!condition) throw new Error(message);
}

check(
  'every Deployment rolls out; every pod runs as uid 1000 on a read-only root filesystem and passes its probes',
  async () => {
    const t = Date.now();
    for (const d of [...SERVICES, ...BACKING]) k(['rollout', 'status', `deployment/${d}`, '--timeout=300s']);
    console.log(
      `    ${SERVICES.length + BACKING.length} Deployments rolled out (${((Date.now() - t) / 1000).toFixed(1)} s)`,
    );
    for (const s of SERVICES) {
      const pods = podsOf(s);
      assert(pods.length >= 1, `${s}: no running pod`);
      for (const pod of pods) {
        const name = pod.metadata.name;
        const c = pod.spec.containers[0];
        const status = pod.status.containerStatuses[0];
        const ready = pod.status.conditions.find((x) => x.type === 'Ready')?.status === 'True';
        assert(ready && status.ready && status.started, `${name}: not ready (${JSON.stringify(status.state)})`);
        assert(c.startupProbe && c.livenessProbe && c.readinessProbe, `${name}: a probe is missing`);
        assert(c.securityContext?.readOnlyRootFilesystem === true, `${name}: root filesystem not read-only`);
        const uid = uidOf(containerPid(pod));
        assert(uid === '1000', `${name}: its process runs as uid ${uid}`);
        const write = k(['exec', name, '--', 'sh', '-c', 'touch /probe'], { check: false });
        assert(write.code !== 0 && /read-only/i.test(write.err), `${name}: / is writable (${write.err})`);
        k(['exec', name, '--', 'sh', '-c', 'touch /tmp/probe && rm /tmp/probe']);
        console.log(
          `    ${name}: uid ${uid}, / read-only, /tmp writable, startup/liveness/readiness passed, ${status.restartCount} restarts`,
        );
      }
    }
  },
);

check(
  'through the edge over HTTPS: a certificate sign-in (authenticate-by-cert, approve-cert) and a refresh',
  async () => {
    edgeAgent();
    const health = await call('GET', '/healthz');
    assert(health.status === 200, `GET /healthz through the edge answered ${health.status}`);
    // A CA of the suite's own, trusted by the auth-service's admin command run in its pod.
    const ca = path.join(work, 'ca');
    openssl(
      ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-sha256', '-days', '2', '-subj', '/CN=Cluster suite CA']
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
      '/CN=cluster-user',
      '-keyout',
      `${user}.key`,
      '-out',
      `${user}.csr`,
    ]);
    openssl(
      ['x509', '-req', '-in', `${user}.csr`, '-CA', `${ca}.pem`, '-CAkey', `${ca}.key`, '-CAcreateserial'].concat([
        '-days',
        '2',
        '-sha256',
        '-out',
        `${user}.pem`,
      ]),
    );
    const admin = (args, input) =>
      k(['exec', '-i', 'deployment/auth-service', '--', 'node', 'dist/admin/cli.js', ...args], { input }).out;
    admin(['trust', 'add', '--cert', '/dev/stdin'], fs.readFileSync(`${ca}.pem`, 'utf8'));
    const owner = randomUUID();
    admin(
      ['user', 'add', '--user', randomUUID(), '--owner', owner, '--cert', '/dev/stdin'],
      fs.readFileSync(`${user}.pem`, 'utf8'),
    );
    ctx.apiKey = admin(['apikey', 'create', '--label', 'cluster-suite']).split('\n').pop().trim();
    ctx.user = user;
    ctx.owner = owner;

    const t = Date.now();
    const first = await signIn();
    const refreshed = await call(
      'POST',
      `/sessions/v5.13/sessions/refresh?auth.sid=${first.Sid}&refresh-token=${first.RefreshToken}&api-key=${encodeURIComponent(ctx.apiKey)}`,
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
    ctx.sid = { authorization: `auth.sid ${pair.Sid}` };
    ctx.bearer = {
      authorization: `Bearer ${await new DevKeys(path.join(ROOT, '.local', 'dev-keys')).mint({ owners: [owner], ttlSeconds: 7200 })}`,
    };
    const socket = await new Promise((resolve, reject) => {
      const s = require('node:tls').connect(
        { host: EDGE.hostname, port: Number(EDGE.port), servername: EDGE_HOST, ca: agent.options.ca },
        () => resolve(s),
      );
      s.on('error', reject);
    });
    const peer = socket.getPeerCertificate();
    console.log(
      `    ${socket.getProtocol()} to ${EDGE_HOST} (certificate ${peer.subject.CN}, verified against the generated one); sign-in and refresh in ${Date.now() - t} ms; the old sid answers 401`,
    );
    socket.end();
  },
);

/** authenticate-by-cert, the rnd decrypted by openssl cms, approve-cert: the session's pair. */
async function signIn() {
  const key = encodeURIComponent(ctx.apiKey);
  const auth = await call('POST', `/auth/v5.13/authenticate-by-cert?apiKey=${key}`, {
    body: fs.readFileSync(`${ctx.user}.pem`),
  });
  if (auth.status !== 200) throw new Error(`authenticate-by-cert answered ${auth.status}: ${auth.body}`);
  const { EncryptedKey, Link } = auth.json();
  const rnd = opensslBinary(
    ['cms', '-decrypt', '-inform', 'DER', '-recip', `${ctx.user}.pem`, '-inkey', `${ctx.user}.key`, '-binary'],
    Buffer.from(EncryptedKey, 'base64'),
  );
  const href = new URL(Link.Href);
  if (href.host !== `${EDGE_HOST}:${EDGE.port}`) throw new Error(`approve link ${Link.Href} is not the edge's`);
  const approved = await call('POST', `${href.pathname}${href.search}&apiKey=${key}`, {
    headers: { 'content-type': 'application/octet-stream' },
    body: rnd,
  });
  if (approved.status !== 200) throw new Error(`approve-cert answered ${approved.status}: ${approved.body}`);
  return approved.json();
}

check('through the edge: a content in parts out of order, then a ranged download with its Repr-Digest', async () => {
  const data = randomBytes(4 * MiB + 4321);
  const order = [3, 1, 4, 0, 2];
  const ranges = order.map((i) => [i * MiB, Math.min((i + 1) * MiB, data.length)]);
  const t = Date.now();
  const created = await sendRange(ctx.owner, null, data, ...ranges[0], ctx.sid);
  assert(created.status === 201, `POST of the first range answered ${created.status}: ${created.body}`);
  const { id } = created.json();
  for (const [i, [s, e]] of ranges.slice(1).entries()) {
    const r = await sendRange(ctx.owner, id, data, s, e, ctx.sid);
    const last = i === ranges.length - 2;
    assert(r.status === (last ? 201 : 200), `PUT ${s}-${e - 1} answered ${r.status}: ${r.body}`);
    assert(r.json()['is-completed'] === last, `PUT ${s}-${e - 1}: is-completed ${r.json()['is-completed']}`);
  }
  const upMs = Date.now() - t;
  const ranged = await call('GET', contentUrl(ctx.owner, id), {
    headers: { ...ctx.sid, range: 'bytes=1000000-3000000' },
  });
  assert(ranged.status === 206, `ranged GET answered ${ranged.status}`);
  assert(
    ranged.headers['content-range'] === `bytes 1000000-3000000/${data.length}`,
    `Content-Range ${ranged.headers['content-range']}`,
  );
  assert(ranged.body.equals(data.subarray(1000000, 3000001)), 'the range read back differs');
  // The whole content's digest, in the algorithm the server names (S3's CRC64NVME for a content
  // stored in parts, SHA-256 for one sent whole).
  const header = ranged.headers['repr-digest'] ?? '';
  const digest = header.startsWith('crc64nvme=')
    ? `crc64nvme=:${crc64nvme(data).toString('base64')}:`
    : `sha-256=:${createHash('sha256').update(data).digest('base64')}:`;
  assert(header.includes(digest), `Repr-Digest ${header} (expected ${digest})`);
  finished.push({ id, sha256: sha256(data) });
  console.log(
    `    ${data.length} bytes in ${order.length} ranges sent in the order ${order.join(',')} (${upMs} ms); bytes 1000000-3000000 answered 206 with Repr-Digest ${digest}`,
  );
});

/** Patches an autoscaler (merge patch). */
const patchHpa = (name, spec) => k(['patch', 'hpa', name, '--type', 'merge', '-p', JSON.stringify({ spec })]);

check('under load, the content-service autoscaler scales out to 2 replicas and back in', async () => {
  // The manifests' scale-down waits 300 s of lower load; the suite shortens that wait to 30 s.
  patchHpa('content-service', { minReplicas: 1, behavior: { scaleDown: { stabilizationWindowSeconds: 30 } } });
  await waitFor(
    'content-service at 1 replica',
    () => readyReplicas('content-service') === 1 && podsOf('content-service').length === 1,
    240_000,
    2000,
  );
  await waitFor(
    'metrics for content-service',
    () =>
      /cpu/.test(k(['get', 'hpa', 'content-service'], { check: false }).out) &&
      !/unknown/.test(k(['get', 'hpa', 'content-service']).out),
    120_000,
    2000,
  );
  const t = Date.now();
  let stop = false;
  let requests = 0;
  let failures = 0;
  const load = async () => {
    const data = randomBytes(8 * MiB);
    while (!stop) {
      try {
        const r = await call('POST', contentUrl(ctx.owner), { headers: ctx.bearer, body: data });
        requests++;
        if (r.status !== 201) failures++;
        else {
          const got = await call('GET', contentUrl(ctx.owner, r.json().id), {
            headers: { ...ctx.bearer, range: 'bytes=0-4194303' },
          });
          requests++;
          if (got.status !== 206) failures++;
        }
      } catch {
        failures++;
      }
    }
  };
  const workers = Array.from({ length: 4 }, load);
  try {
    await waitFor('scale-out to 2 replicas', () => readyReplicas('content-service') >= 2, 300_000, 2000);
  } finally {
    stop = true;
    await Promise.all(workers);
  }
  const outSeconds = (Date.now() - t) / 1000;
  const hpaOut = k(['get', 'hpa', 'content-service']).out.split('\n').pop();
  const t2 = Date.now();
  await waitFor(
    'scale-in to 1 replica',
    () => getJson(['get', 'deployment', 'content-service']).spec.replicas === 1,
    420_000,
    2000,
  );
  const inSeconds = (Date.now() - t2) / 1000;
  console.log(
    `    load: ${requests} uploads of 8 MiB and ranged reads, ${failures} failed; ${hpaOut.replace(/\s+/g, ' ')}`,
  );
  console.log(
    `    scaled out to 2 replicas ${outSeconds.toFixed(0)} s after the load began; back to 1 ${inSeconds.toFixed(0)} s after it stopped (scale-down window 30 s)`,
  );
  patchHpa('content-service', { behavior: { scaleDown: { stabilizationWindowSeconds: 300 } } });
  assert(failures === 0, `${failures} requests failed under load`);
});

/** UTC hh:mm:ss of a Date.now() value, the stamp of the traffic's failures and of the pod events. */
const clock = (ms) => new Date(ms).toISOString().slice(11, 19);

/**
 * Mixed traffic until stop(): uploads in 4 parts (out of order), ranged downloads of finished
 * contents, and certificate sign-ins with a refresh (one every 8 s: the per-address rate limit is
 * 30 a minute). No request is retried: every error and unexpected status counts as failed.
 */
function traffic() {
  const stats = { requests: 0, failed: 0, uploads: 0, downloads: 0, signIns: 0, errors: [] };
  let stopping = false;
  const fail = (what) => {
    stats.failed++;
    if (stats.errors.length < 10) stats.errors.push(`${clock(Date.now())} ${what}`);
  };
  const req = async (what, fn, ok) => {
    stats.requests++;
    try {
      const r = await fn();
      if (!ok(r)) {
        // A 5xx's whole error body: its track id finds the service's log line.
        fail(`${what}: ${r.status} ${r.body.toString().slice(0, r.status >= 500 ? 600 : 120)}`);
        return null;
      }
      return r;
    } catch (error) {
      fail(`${what}: ${error.code || error.message}`);
      return null;
    }
  };
  const uploader = async () => {
    while (!stopping) {
      const data = randomBytes(4 * 256 * 1024);
      const parts = [2, 0, 3, 1].map((i) => [i * 256 * 1024, (i + 1) * 256 * 1024]);
      const first = await req(
        'upload POST',
        () => sendRange(ctx.owner, null, data, ...parts[0], ctx.bearer),
        (r) => r.status === 201,
      );
      if (!first) continue;
      const id = first.json().id;
      let done = true;
      for (const [i, [s, e]] of parts.slice(1).entries()) {
        const last = i === parts.length - 2;
        const r = await req(
          'upload PUT',
          () => sendRange(ctx.owner, id, data, s, e, ctx.bearer),
          (x) => x.status === (last ? 201 : 200),
        );
        if (!r) {
          done = false;
          break;
        }
      }
      if (done) {
        stats.uploads++;
        finished.push({ id, sha256: sha256(data) });
      }
    }
  };
  const downloader = async () => {
    while (!stopping) {
      const f = finished[Math.floor(Math.random() * finished.length)];
      const r = await req(
        'download',
        () => call('GET', contentUrl(ctx.owner, f.id), { headers: { ...ctx.bearer, range: 'bytes=0-65535' } }),
        (x) => x.status === 206,
      );
      if (r) stats.downloads++;
      await sleep(50);
    }
  };
  const signer = async () => {
    while (!stopping) {
      const at = Date.now();
      const pair = await req(
        'sign-in',
        async () => ({ status: 200, pair: await signIn() }),
        () => true,
      );
      if (pair) {
        stats.requests++; // approve-cert
        const key = encodeURIComponent(ctx.apiKey);
        const r = await req(
          'refresh',
          () =>
            call(
              'POST',
              `/sessions/v5.13/sessions/refresh?auth.sid=${pair.pair.Sid}&refresh-token=${pair.pair.RefreshToken}&api-key=${key}`,
            ),
          (x) => x.status === 200,
        );
        if (r) stats.signIns++;
      }
      while (!stopping && Date.now() - at < 8000) await sleep(200);
    }
  };
  const running = [uploader(), uploader(), downloader(), downloader(), signer()];
  return {
    stats,
    async stop() {
      stopping = true;
      await Promise.all(running);
      return stats;
    },
  };
}

/**
 * The log lines, in the services' pods still there, that name the track ids of failed requests
 * (a pod deleted or replaced since took its log with it).
 */
/**
 * The logs of pods about to go (deleted, or replaced by a rollout), followed until they end: a
 * request a terminating pod failed is found there after the pod is gone. At most 32 MiB each.
 */
const followed = [];
function followLogsOf(pods) {
  for (const pod of pods) {
    const child = spawn(
      KUBECTL[0],
      [...KUBECTL.slice(1), '-n', NS, 'logs', '-f', pod, '--all-containers', '--prefix'],
      {
        cwd: ROOT,
        stdio: ['ignore', 'pipe', 'ignore'],
      },
    );
    const entry = { pod, out: '', child };
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (d) => {
      if (entry.out.length < 32 * MiB) entry.out += d;
    });
    child.on('error', () => undefined);
    followed.push(entry);
  }
}
function stopFollowing() {
  for (const f of followed) f.child.kill();
}

function printLogLinesOf(errors) {
  const ids = errors.map((e) => /"track-id":"([0-9a-f-]{36})"/.exec(e)?.[1]).filter(Boolean);
  if (ids.length === 0) return;
  const logs = followed.map((f) => f.out);
  for (const s of SERVICES)
    logs.push(
      k(['logs', '-l', `app.kubernetes.io/name=${s}`, '--all-containers', '--prefix', '--tail=-1'], {
        check: false,
      }).out,
    );
  for (const line of new Set(logs.join('\n').split('\n')))
    if (ids.some((id) => line.includes(id))) console.log(`    log: ${line.slice(0, 2000)}`);
}

check('pods deleted and Deployments restarted under steady traffic: 0 failed requests, 0 contents lost', async () => {
  for (const s of SERVICES) patchHpa(s, { minReplicas: 2 });
  await waitFor(
    '2 ready replicas of each service',
    () => SERVICES.every((s) => readyReplicas(s) === 2 && podsOf(s).length === 2),
    300_000,
    2000,
  );
  const load = traffic();
  const events = [];
  const t0 = Date.now();
  try {
    await sleep(10_000);
    for (const s of SERVICES) {
      const victim = podsOf(s)[0].metadata.name;
      followLogsOf([victim]);
      const t = Date.now();
      k(['delete', 'pod', victim, '--wait=true']);
      await waitFor(`${s} back to 2 ready`, () => readyReplicas(s) === 2, 180_000);
      events.push(`delete ${victim} ${((Date.now() - t) / 1000).toFixed(1)} s from ${clock(t)}`);
      await sleep(3000);
    }
    for (const s of SERVICES) {
      followLogsOf(podsOf(s).map((p) => p.metadata.name));
      const t = Date.now();
      k(['rollout', 'restart', `deployment/${s}`]);
      k(['rollout', 'status', `deployment/${s}`, '--timeout=300s']);
      events.push(`restart ${s} ${((Date.now() - t) / 1000).toFixed(1)} s from ${clock(t)}`);
      await sleep(3000);
    }
    await sleep(5000);
  } finally {
    await load.stop();
    // Whatever a pod logged by now is kept; a follower still running is not waited for.
    await sleep(2000);
    stopFollowing();
  }
  const st = load.stats;
  let lost = 0;
  for (const f of finished) {
    const got = await call('GET', contentUrl(ctx.owner, f.id), { headers: ctx.bearer });
    if (got.status !== 200 || sha256(got.body) !== f.sha256) lost++;
  }
  console.log(`    ${events.join('; ')}`);
  console.log(
    `    ${((Date.now() - t0) / 1000).toFixed(0)} s of traffic: ${st.requests} requests, ${st.failed} failed; ${st.uploads} uploads in parts, ${st.downloads} ranged downloads, ${st.signIns} sign-ins with refresh; ${finished.length} acknowledged contents read back, ${lost} lost`,
  );
  for (const e of st.errors) console.log(`    failed: ${e}`);
  if (st.failed > 0) printLogLinesOf(st.errors);
  assert(st.failed === 0, `${st.failed} requests failed`);
  assert(lost === 0, `${lost} acknowledged contents lost`);
});

check('kill -9 of the content-service mid-64 MiB part: the upload completes within 15 s', async () => {
  const data = randomBytes(2 * 64 * MiB);
  const created = await sendRange(ctx.owner, null, data, 0, 64 * MiB, ctx.bearer);
  assert(created.status === 201, `POST of part 1 answered ${created.status}`);
  const { id } = created.json();
  // The second part streams slowly (about 8 s), so that the kill lands in its middle.
  const part = data.subarray(64 * MiB);
  let sent = 0;
  const slow = new (require('node:stream').Readable)({
    read() {
      if (sent >= part.length) return this.push(null);
      const chunk = part.subarray(sent, sent + 4 * MiB);
      sent += chunk.length;
      setTimeout(() => this.push(chunk), 500);
    },
  });
  const inFlight = new Promise((resolve) => {
    const req = https.request(
      {
        host: EDGE.hostname,
        port: EDGE.port,
        path: contentUrl(ctx.owner, id),
        method: 'PUT',
        agent,
        servername: EDGE_HOST,
        headers: {
          host: `${EDGE_HOST}:${EDGE.port}`,
          ...ctx.bearer,
          'content-range': `bytes ${64 * MiB}-${data.length - 1}/${data.length}`,
          'content-length': String(part.length),
        },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode }));
      },
    );
    req.on('error', (error) => resolve({ status: 0, error }));
    slow.pipe(req);
  });
  await waitFor('a quarter of the part sent', () => sent >= 16 * MiB, 30_000, 100);
  const killedAt = Date.now();
  const pods = podsOf('content-service');
  for (const pod of pods) process.kill(containerPid(pod), 'SIGKILL');
  const seen = await inFlight;
  let completed;
  let tries = 0;
  for (;;) {
    tries++;
    try {
      completed = await sendRange(ctx.owner, id, data, 64 * MiB, data.length, ctx.bearer);
      if (completed.status < 500) break;
    } catch {
      // refused or reset while the container restarts
    }
    if (Date.now() - killedAt > 60_000) break;
    await sleep(500);
  }
  const recoveryMs = Date.now() - killedAt;
  assert(
    completed?.status === 201 && completed.json()['is-completed'] === true,
    `the part answered ${completed?.status}`,
  );
  const got = await call('GET', contentUrl(ctx.owner, id), { headers: ctx.bearer });
  assert(got.status === 200 && sha256(got.body) === sha256(data), 'the content read back differs');
  finished.push({ id, sha256: sha256(data) });
  const restarts = podsOf('content-service').map((p) => p.status.containerStatuses[0].restartCount);
  console.log(
    `    ${pods.length} content-service container(s) killed with ${(sent / MiB).toFixed(0)} MiB of the 64 MiB part sent; the request in flight got ${seen.status || seen.error?.code}; the part stored after ${tries} tries, ${(recoveryMs / 1000).toFixed(1)} s after the kill (bound 15 s); restarts ${restarts.join(',')}; 128 MiB read back identical`,
  );
  assert(recoveryMs <= RECOVERY_BOUND_MS, `recovered in ${recoveryMs} ms, over the 15 s bound`);
});

check(
  'NetworkPolicy: a pod outside the allowed set reaches neither the auth-service nor a metrics port, if the network plugin enforces it',
  async () => {
    // A throwaway pod in a namespace of its own, with the node image's sh and node.
    const image = getJson(['get', 'deployment', 'gateway']).spec.template.spec.containers[0].image;
    kubectl(['create', 'namespace', 'cluster-suite-outsider'], { check: false });
    // `kubectl run --rm -i` can miss the output of a container that ends before it attaches (an
    // empty answer): asked again then, at most three times.
    const probe = (target) => {
      for (let attempt = 1; ; attempt++) {
        const out = probeOnce(target);
        if (out !== '' || attempt === 3) return out;
      }
    };
    const probeOnce = (target) =>
      kubectl(
        [
          '-n',
          'cluster-suite-outsider',
          'run',
          `probe-${randomBytes(3).toString('hex')}`,
          '--rm',
          '-i',
          '--restart=Never',
          '--quiet',
          `--image=${image}`,
          '--image-pull-policy=Never',
          '--overrides',
          JSON.stringify({
            spec: {
              securityContext: { runAsNonRoot: true, runAsUser: 1000, seccompProfile: { type: 'RuntimeDefault' } },
              containers: [
                {
                  name: 'p',
                  image,
                  imagePullPolicy: 'Never',
                  command: [
                    'node',
                    '-e',
                    `require('node:net').connect(${JSON.stringify(target)}).on('connect',()=>{console.log('open');process.exit(0)}).on('error',(e)=>{console.log(e.code);process.exit(0)});setTimeout(()=>{console.log('timeout');process.exit(0)},3000)`,
                  ],
                  securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
                },
              ],
            },
          }),
        ],
        { check: false },
      ).out;
    const auth = probe({ host: `auth-service.${NS}.svc.cluster.local`, port: 80 });
    const gatewayPod = podsOf('gateway')[0];
    const metrics = probe({ host: gatewayPod.status.podIP, port: 9464 });
    kubectl(['delete', 'namespace', 'cluster-suite-outsider', '--wait=false'], { check: false });
    console.log(`    from another namespace: auth-service:80 ${auth}, gateway pod :9464 ${metrics}`);
    if (/open/.test(auth) && /open/.test(metrics))
      throw new NotCheckable('the network plugin (the CNI bridge) implements no NetworkPolicy: both ports are open');
    assert(!/open/.test(auth) && !/open/.test(metrics), 'the policies are enforced for one target but not the other');
  },
);

check('kubectl drain respects the PodDisruptionBudgets: the eviction past maxUnavailable is refused', async () => {
  for (const s of SERVICES) patchHpa(s, { minReplicas: 2 });
  await waitFor('2 ready replicas of each service', () => SERVICES.every((s) => readyReplicas(s) === 2), 300_000, 2000);
  const node = JSON.parse(kubectl(['get', 'nodes', '-o', 'json']).out).items[0].metadata.name;
  const t = Date.now();
  const drain = kubectl(
    [
      'drain',
      node,
      '--pod-selector=app.kubernetes.io/part-of=content-platform',
      '--delete-emptydir-data',
      '--ignore-daemonsets',
      '--timeout=40s',
    ],
    { check: false },
  );
  const drainSeconds = (Date.now() - t) / 1000;
  kubectl(['uncordon', node]);
  // kubectl: error when evicting pods/"NAME" -n "NS" (will retry after 5s): Cannot evict pod as it
  // would violate the pod's disruption budget.
  const refused = [
    ...new Set(
      [...drain.err.matchAll(/evicting pods\/"([^"]+)"/g)].map((m) => m[1].replace(/-[a-z0-9]+-[a-z0-9]+$/, '')),
    ),
  ];
  const evicted = (drain.out.match(/evicted/g) || []).length;
  const budget = /disruption budget/i.test(drain.err);
  console.log(
    `    drain of ${node} (the platform's pods): exit ${drain.code} after ${drainSeconds.toFixed(0)} s; ${evicted} pods evicted; refused by a disruption budget: ${refused.join(', ') || 'none'}`,
  );
  assert(drain.code !== 0 && budget, `drain was not held back by a PodDisruptionBudget:\n${drain.err.slice(-600)}`);
  for (const s of SERVICES) {
    const pdb = getJson(['get', 'pdb', s]);
    assert(pdb.status.disruptionsAllowed <= 1, `${s}: ${pdb.status.disruptionsAllowed} disruptions allowed`);
  }
  await waitFor(
    'the services back to 2 ready each',
    () => SERVICES.every((s) => readyReplicas(s) === 2),
    300_000,
    2000,
  );
});

async function main() {
  let passed = 0;
  let failed = 0;
  let unchecked = 0;
  for (const [index, { name, fn }] of checks.entries()) {
    const t = Date.now();
    if (index > 1 && !ctx.owner) {
      failed++;
      console.log(`FAIL ${name} (not run: the platform did not answer through the edge)`);
      continue;
    }
    try {
      await fn();
      passed++;
      console.log(`ok   ${name} (${((Date.now() - t) / 1000).toFixed(1)} s)`);
    } catch (error) {
      if (error instanceof NotCheckable) {
        unchecked++;
        console.log(`--   ${name}: not checked here: ${error.message}`);
        continue;
      }
      failed++;
      console.log(`FAIL ${name} (${((Date.now() - t) / 1000).toFixed(1)} s)\n    ${error.stack || error}`);
    }
  }
  // The autoscalers as the overlay sets them.
  for (const s of SERVICES)
    k(['patch', 'hpa', s, '--type', 'merge', '-p', '{"spec":{"minReplicas":1}}'], { check: false });
  agent?.destroy();
  fs.rmSync(work, { recursive: true, force: true });
  console.log(`${passed} passed, ${failed} failed, ${unchecked} not checked`);
  process.exitCode = failed === 0 ? 0 : 1;
}

main();
