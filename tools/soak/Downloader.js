// Downloaders and the deleter of the soak. A downloader checks acknowledged contents by SHA-256:
// whole GETs, ranged GETs (206) and HEADs. The deleter deletes contents (reading each back first,
// so that every acknowledged content is checked at least once), checks that a deleted one answers
// 404, and deletes unfinished uploads of its own, whose later writes must answer 404 too.
const { ContentBytes } = require('./ContentBytes');
const { json, errorIdOf } = require('./SoakHttp');

const MiB = 1024 * 1024;
const auth = (c) => ({ authorization: `Bearer ${c.token}` });

/** GET of the whole content, checked. Returns 'ok', 'gone' (deleted meanwhile) or 'failed'. */
async function checkWhole(ctx, c, worker, { counted = true } = {}) {
  const url = `${ctx.gatewayUrl}/v1/${c.owner}/contents/${c.id}`;
  const r = await ctx.http.send({ method: 'GET', url, headers: auth(c), hash: true, worker }, { until: ctx.aborted });
  return judge(ctx, c, r, 'GET whole', () => {
    if (r.status !== 200) return `status ${r.status}`;
    if (r.bytes !== c.size) return `${r.bytes} bytes, not ${c.size}`;
    if (r.sha256 !== c.bytes.sha256()) return `SHA-256 ${r.sha256}, not ${c.bytes.sha256()}`;
    if (counted) ctx.stats.downloads.whole++;
    return null;
  });
}

/** Turns an answer into ok / gone / a finding. `wrong()` names what is wrong with a 2xx answer. */
function judge(ctx, c, r, what, wrong) {
  if (r.exhausted || r.error) {
    ctx.stats.downloads.gaveUp++;
    return 'failed';
  }
  if (r.status === 404) {
    if (c.state !== 'live') return 'gone';
    ctx.ledger.violation({
      kind: 'lost',
      at: r.at,
      id: c.id,
      owner: c.owner,
      size: c.size,
      ackAt: c.ackAt,
      detail: `${what} answered 404 ${errorIdOf(r)} (request ${r.headers['x-request-id']})`,
    });
    c.state = 'lost';
    return 'failed';
  }
  const problem = r.status >= 200 && r.status < 300 ? wrong() : `status ${r.status} ${errorIdOf(r) ?? ''}`;
  if (!problem) return 'ok';
  const corrupt = r.status >= 200 && r.status < 300;
  ctx.ledger.violation({
    kind: corrupt ? 'corrupt' : 'wrongStatus',
    at: r.at,
    id: c.id,
    owner: c.owner,
    size: c.size,
    ackAt: c.ackAt,
    detail: `${what}: ${problem} (request ${r.headers['x-request-id']})`,
  });
  return 'failed';
}

async function checkRange(ctx, c, prng, worker) {
  const size = c.size;
  let spec;
  let a;
  let b;
  const form = prng.next();
  if (form < 0.15 && size > 1) {
    const n = prng.int(1, Math.min(size, 4 * MiB));
    [spec, a, b] = [`bytes=-${n}`, size - n, size - 1];
  } else if (form < 0.3 && size <= 8 * MiB) {
    a = prng.int(0, size - 1);
    [spec, b] = [`bytes=${a}-`, size - 1];
  } else {
    a = prng.int(0, size - 1);
    b = Math.min(size - 1, a + prng.int(0, 8 * MiB));
    spec = `bytes=${a}-${b}`;
  }
  const url = `${ctx.gatewayUrl}/v1/${c.owner}/contents/${c.id}`;
  const r = await ctx.http.send(
    { method: 'GET', url, headers: { ...auth(c), range: spec }, hash: true, worker },
    { until: ctx.aborted },
  );
  return judge(ctx, c, r, `GET ${spec}`, () => {
    if (r.status !== 206) return `status ${r.status} for ${spec}`;
    if (r.headers['content-range'] !== `bytes ${a}-${b}/${size}`) return `Content-Range ${r.headers['content-range']}`;
    if (r.sha256 !== c.bytes.sha256Of(a, b)) return `the bytes of ${spec} differ`;
    ctx.stats.downloads.ranges++;
    return null;
  });
}

async function checkHead(ctx, c, worker) {
  const url = `${ctx.gatewayUrl}/v1/${c.owner}/contents/${c.id}`;
  const r = await ctx.http.send({ method: 'HEAD', url, headers: auth(c), worker }, { until: ctx.aborted });
  return judge(ctx, c, r, 'HEAD', () => {
    if (r.headers['x-upload-state'] && r.headers['x-upload-state'] !== 'ready')
      return `X-Upload-State ${r.headers['x-upload-state']}`;
    if (Number(r.headers['content-length']) !== c.size) return `Content-Length ${r.headers['content-length']}`;
    ctx.stats.downloads.heads++;
    return null;
  });
}

async function downloaderLoop(ctx, index) {
  const prng = ctx.prng.fork(`downloader-${index}`);
  const worker = `downloader-${index}`;
  while (ctx.trafficOn()) {
    const live = ctx.ledger.live();
    if (!live.length) {
      await new Promise((r) => setTimeout(r, 200));
      continue;
    }
    const c = prng.pick(live);
    const op = prng.next();
    if (op < 0.35 && c.size <= 32 * MiB) await checkWhole(ctx, c, worker);
    else if (op < 0.8) await checkRange(ctx, c, prng, worker);
    else await checkHead(ctx, c, worker);
    await new Promise((r) => setTimeout(r, prng.int(20, 250)));
  }
}

/** After a deletion: GET and HEAD must answer 404 (resurrection otherwise). */
async function checkGone(ctx, owner, token, id, worker, what) {
  const url = `${ctx.gatewayUrl}/v1/${owner}/contents/${id}`;
  for (const method of ['GET', 'HEAD']) {
    const r = await ctx.http.send(
      { method, url, headers: { authorization: `Bearer ${token}` }, hash: true, worker },
      { until: ctx.aborted },
    );
    if (r.exhausted || r.error) continue;
    if (r.status !== 404) {
      ctx.ledger.violation({
        kind: 'resurrected',
        at: r.at,
        id,
        owner,
        detail: `${what}: ${method} after the deletion answered ${r.status} ${errorIdOf(r) ?? ''} (request ${r.headers['x-request-id']})`,
      });
      return false;
    }
  }
  return true;
}

/** DELETE with retries: true once deleted (204, or 404 after an attempt whose answer was lost). */
async function deleteContent(ctx, owner, token, id, worker) {
  const url = `${ctx.gatewayUrl}/v1/${owner}/contents/${id}`;
  const r = await ctx.http.send(
    { method: 'DELETE', url, headers: { authorization: `Bearer ${token}` }, worker },
    { until: ctx.aborted },
  );
  if (r.status === 204) return { deleted: true, r };
  if (r.status === 404 && r.retried) return { deleted: true, r, ambiguous: true };
  return { deleted: false, r };
}

async function deleterLoop(ctx) {
  const prng = ctx.prng.fork('deleter');
  const worker = 'deleter';
  const { owner, token } = ctx.deleterOwner;
  for (let n = 0; ctx.trafficOn(); n++) {
    const over = ctx.ledger.liveBytes() > ctx.keepBytes;
    if (!over) await new Promise((r) => setTimeout(r, prng.int(1000, 3000)));
    if (!ctx.trafficOn()) break;
    if (!over && prng.chance(0.25)) {
      await deleteUnfinished(ctx, prng, owner, token, n);
      continue;
    }
    const live = ctx.ledger.live();
    if (!live.length) continue;
    // Over the disk budget: the largest first; otherwise any.
    const c = over ? live.reduce((m, x) => (x.size > m.size ? x : m)) : prng.pick(live);
    c.state = 'deleting';
    const read = await checkWhole(ctx, c, worker, { counted: false });
    if (read === 'ok') ctx.stats.readBeforeDelete++;
    else if (read === 'failed' && c.state === 'lost') continue;
    const { deleted, r, ambiguous } = await deleteContent(ctx, c.owner, c.token, c.id, worker);
    if (!deleted) {
      if (r.status === 404)
        ctx.ledger.violation({
          kind: 'lost',
          at: r.at,
          id: c.id,
          owner: c.owner,
          size: c.size,
          ackAt: c.ackAt,
          detail: `DELETE answered 404 at its first attempt (request ${r.headers['x-request-id']})`,
        });
      else if (!r.exhausted) ctx.unexpected({ worker, id: c.id }, 'DELETE', r);
      // A DELETE that never got an answer may have happened: the read-back accepts 200 or 404.
      c.state = r.status === 404 ? 'lost' : r.exhausted ? 'uncertain' : 'live';
      continue;
    }
    c.state = 'deleted';
    c.deletedAt = r.at;
    c.deleteAmbiguous = !!ambiguous;
    ctx.stats.deleted++;
    ctx.journal({ kind: 'deleted', id: c.id, owner: c.owner, at: r.at, requestId: r.headers['x-request-id'] });
    await checkGone(ctx, c.owner, c.token, c.id, worker, 'deleted content');
  }
}

/** An unfinished upload of the deleter's own: the first half sent, DELETE, then the rest must answer 404. */
async function deleteUnfinished(ctx, prng, owner, token, n) {
  const worker = 'deleter';
  const size = prng.int(2048, 4 * MiB);
  const half = Math.floor(size / 2);
  const bytes = new ContentBytes(`${ctx.seed}/deleter/${n}`, size);
  const url = `${ctx.gatewayUrl}/v1/${owner}/contents`;
  const headers = (a, b) => ({
    authorization: `Bearer ${token}`,
    'content-type': 'application/octet-stream',
    'content-range': `bytes ${a}-${b}/${size}`,
  });
  const created = await ctx.http.send(
    { method: 'POST', url, headers: headers(0, half - 1), body: bytes.range(0, half - 1), worker },
    { until: ctx.aborted },
  );
  const id = created.status === 201 ? json(created)?.id : null;
  if (!id) return;
  const { deleted, r } = await deleteContent(ctx, owner, token, id, worker);
  if (!deleted) {
    if (!r.exhausted) ctx.unexpected({ worker, id }, 'DELETE (unfinished)', r);
    return;
  }
  ctx.ledger.deletedUnfinished.set(id, { id, owner, token, size, deletedAt: r.at });
  ctx.stats.deletedUnfinished++;
  const rest = await ctx.http.send(
    {
      method: 'PUT',
      url: `${url}/${id}`,
      headers: headers(half, size - 1),
      body: bytes.range(half, size - 1),
      worker,
    },
    { until: ctx.aborted },
  );
  if (!rest.exhausted && !rest.error && rest.status !== 404)
    ctx.ledger.violation({
      kind: 'resurrected',
      at: rest.at,
      id,
      owner,
      detail: `the rest of a deleted unfinished upload answered ${rest.status} ${errorIdOf(rest) ?? ''} (request ${rest.headers['x-request-id']})`,
    });
  await checkGone(ctx, owner, token, id, worker, 'deleted unfinished upload');
}

module.exports = { downloaderLoop, deleterLoop, checkWhole, checkGone, checkRange, checkHead };
