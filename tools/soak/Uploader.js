// An uploader of the soak: contents of 1 KiB up to the run's largest, sent as one-shot POSTs,
// aligned 64 MiB parts or random ranges in random order (some with `/*` totals, half with
// Content-Digest), resumed by HEAD + X-Received-Ranges when told to. Each acknowledged content
// goes into the ledger.
const { createHash } = require('node:crypto');
const { ContentBytes } = require('./ContentBytes');
const { json, errorIdOf } = require('./SoakHttp');
const { PART, parseRanges, missingPieces } = require('./ranges');

const KiB = 1024;
const MiB = 1024 * KiB;

/** The plan of one upload, from the uploader's own random stream. `scale` (0.3–1) shrinks the sizes of short runs. */
function planUpload(prng, scale) {
  const tier = prng.next();
  let size;
  let tierName;
  if (tier < 0.3) [size, tierName] = [prng.int(KiB, 64 * KiB), 'tiny'];
  else if (tier < 0.6) [size, tierName] = [prng.int(64 * KiB, 2 * MiB), 'small'];
  else if (tier < 0.85) [size, tierName] = [prng.int(2 * MiB, Math.round(Math.max(8, 24 * scale) * MiB)), 'medium'];
  else if (tier < 0.95)
    [size, tierName] = [
      prng.int(Math.round(Math.max(8, 24 * scale) * MiB), Math.round(Math.max(20, 64 * scale) * MiB)),
      'big',
    ];
  else [size, tierName] = [prng.int(PART + 1, PART + Math.round(96 * scale * MiB)), 'large'];

  let mode;
  if (size <= PART) mode = prng.chance(0.25) ? 'one-shot' : 'ranges';
  else mode = prng.chance(0.5) ? 'aligned' : 'ranges';

  let ranges;
  if (mode === 'one-shot') ranges = [[0, size - 1]];
  else if (mode === 'aligned') {
    ranges = [];
    for (let a = 0; a < size; a += PART) ranges.push([a, Math.min(size, a + PART) - 1]);
  } else {
    const k = prng.int(1, 8);
    const cuts = new Set();
    for (let i = 1; i < k && cuts.size < size - 1; i++) cuts.add(prng.int(1, size - 1));
    const points = [0, ...[...cuts].sort((a, b) => a - b), size];
    ranges = [];
    for (let i = 0; i + 1 < points.length; i++) {
      // A range longer than a part is cut in halves until it fits.
      const stack = [[points[i], points[i + 1] - 1]];
      while (stack.length) {
        const [a, b] = stack.pop();
        if (b - a + 1 <= PART) ranges.push([a, b]);
        else {
          const mid = a + Math.floor((b - a + 1) / 2);
          stack.push([mid, b], [a, mid - 1]);
        }
      }
    }
  }
  ranges = prng.shuffle(ranges);
  const star = ranges.length > 1 && prng.chance(0.3);
  const namesTotal = ranges.map((_, i) => !star || i === ranges.length - 1 || prng.chance(0.3));
  return {
    size,
    tier: tierName,
    mode,
    ranges,
    namesTotal,
    star,
    digest: prng.chance(0.5),
    concurrency: ranges.length >= 3 && prng.chance(0.4) ? 2 : 1,
  };
}

const sha256Digest = (buf) => `sha-256=:${createHash('sha256').update(buf).digest('base64')}:`;

/** One content's upload: its requests, resumes and the outcome ('acknowledged', 'pending', 'failed'). */
class UploadRun {
  constructor({ ctx, owner, token, plan, name, worker }) {
    Object.assign(this, { ctx, owner, token, plan, worker });
    this.bytes = new ContentBytes(name, plan.size);
    this.id = null;
    this.completed = false;
    this.requests = 0;
    this.log = [];
  }

  headersFor(a, b, namesTotal, body) {
    const h = { authorization: `Bearer ${this.token}`, 'content-type': 'application/octet-stream' };
    if (a !== null) h['content-range'] = `bytes ${a}-${b}/${namesTotal ? this.plan.size : '*'}`;
    if (this.plan.digest) h['content-digest'] = sha256Digest(body);
    return h;
  }

  note(what, r, extra = {}) {
    this.log.push({
      t: r?.at,
      what,
      status: r?.status,
      error: r?.error?.message,
      errorId: r ? errorIdOf(r) : undefined,
      requestId: r?.headers?.['x-request-id'],
      ...extra,
    });
  }

  get url() {
    return `${this.ctx.gatewayUrl}/v1/${this.owner}/contents${this.id ? `/${this.id}` : ''}`;
  }

  /** Sends the first request (a POST); false when no content came of it. */
  async create() {
    const { ctx, plan } = this;
    const oneShot = plan.mode === 'one-shot';
    const [a, b] = plan.ranges[0];
    const body = this.bytes.range(a, b);
    const r = await ctx.http.send(
      {
        method: 'POST',
        url: this.url,
        headers: this.headersFor(oneShot ? null : a, b, plan.namesTotal[0], body),
        body,
        worker: this.worker,
      },
      { until: ctx.aborted },
    );
    this.requests++;
    this.note('POST', r, { range: oneShot ? 'whole' : `${a}-${b}` });
    if (r.status === 201) {
      this.id = json(r)?.id;
      if (oneShot || b - a + 1 === plan.size) this.completed = true;
      return !!this.id;
    }
    if (!r.exhausted) ctx.unexpected(this, 'POST', r);
    return false;
  }

  /** Sends the ranges of `queue` (`concurrency` at once); stops early when told to resume. */
  async sendRanges(queue, concurrency) {
    const { ctx } = this;
    let resume = false;
    let exhausted = false;
    const worker = async () => {
      while (queue.length && !resume && !this.completed && !this.lost) {
        const { a, b, namesTotal } = queue.shift();
        const body = this.bytes.range(a, b);
        const r = await ctx.http.send(
          { method: 'PUT', url: this.url, headers: this.headersFor(a, b, namesTotal, body), body, worker: this.worker },
          { until: ctx.aborted },
        );
        this.requests++;
        this.note('PUT', r, { range: `${a}-${b}` });
        const answer = json(r);
        if ((r.status === 200 || r.status === 201) && answer) {
          if (answer['is-completed'] === true) {
            this.completed = true;
            this.completedBy = { status: r.status, range: `${a}-${b}`, requestId: r.headers['x-request-id'] };
          }
        } else if (r.exhausted) {
          exhausted = true;
          resume = true;
        } else if (r.status === 409 && errorIdOf(r) === 'urn:error:contents:uploadRestarted') {
          ctx.stats.restartsTold++;
          resume = true;
        } else if (r.status === 404) {
          this.lost = true;
          ctx.ledger.violation({
            kind: 'lostUpload',
            at: r.at,
            owner: this.owner,
            id: this.id,
            size: this.plan.size,
            detail: `PUT ${a}-${b} answered 404 ${errorIdOf(r)} for an upload in progress`,
            log: this.log,
          });
        } else {
          ctx.unexpected(this, `PUT ${a}-${b}`, r);
          resume = true;
        }
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
    return { resume, exhausted };
  }

  /** HEAD: ready (true), the missing pieces (array), or null when HEAD itself failed. */
  async status() {
    const r = await this.ctx.http.send(
      { method: 'HEAD', url: this.url, headers: { authorization: `Bearer ${this.token}` }, worker: this.worker },
      { until: this.ctx.aborted },
    );
    this.note('HEAD', r, { received: r.headers?.['x-received-ranges'], state: r.headers?.['x-upload-state'] });
    if (r.status !== 200) {
      if (r.status === 404) {
        this.lost = true;
        this.ctx.ledger.violation({
          kind: 'lostUpload',
          at: r.at,
          owner: this.owner,
          id: this.id,
          size: this.plan.size,
          detail: 'HEAD answered 404 for an upload in progress',
          log: this.log,
        });
      }
      return null;
    }
    if (r.headers['x-upload-state'] === 'ready') return true;
    return missingPieces(parseRanges(r.headers['x-received-ranges']), this.plan.size);
  }

  /** HEAD and send what is missing, at most `rounds` times, until `deadline` (ms). */
  async resume(rounds, deadline) {
    for (let i = 0; i < rounds && !this.completed && !this.lost && Date.now() < deadline; i++) {
      const s = await this.status();
      if (s === true) {
        this.completed = true;
        this.completedBy = { status: 'HEAD ready' };
        break;
      }
      if (s === null) continue;
      this.ctx.stats.resumes++;
      await this.sendRanges(
        s.map(([a, b]) => ({ a, b, namesTotal: true })),
        1,
      );
    }
  }

  async run() {
    const { ctx, plan } = this;
    if (!(await this.create())) return 'failed';
    if (!this.completed) {
      const queue = plan.ranges.slice(1).map(([a, b], i) => ({ a, b, namesTotal: plan.namesTotal[i + 1] }));
      await this.sendRanges(queue, plan.concurrency);
      if (!this.completed && !this.lost) await this.resume(5, Date.now() + 120_000);
    }
    if (this.lost) return 'failed';
    if (this.completed) {
      this.acknowledge();
      return 'acknowledged';
    }
    ctx.ledger.pending.add(this);
    return 'pending';
  }

  acknowledge() {
    const { ctx, plan } = this;
    const entry = ctx.ledger.acknowledge({
      id: this.id,
      owner: this.owner,
      token: this.token,
      bytes: this.bytes,
      size: plan.size,
      ackAt: ctx.now(),
      how: plan.mode,
      ranges: plan.ranges.length,
      large: plan.size > PART,
      webhook: true,
      requests: this.requests,
    });
    ctx.journal({
      kind: 'ack',
      id: this.id,
      owner: this.owner,
      size: plan.size,
      mode: plan.mode,
      ranges: plan.ranges.length,
      star: plan.star,
      digest: plan.digest,
      completedBy: this.completedBy,
      log: this.log,
    });
    return entry;
  }
}

/** Uploads one content after another until the traffic stops. */
async function uploaderLoop(ctx, index) {
  const prng = ctx.prng.fork(`uploader-${index}`);
  const { owner, token } = ctx.owners[index];
  for (let n = 0; ctx.trafficOn(); n++) {
    const plan = planUpload(prng, ctx.scale);
    const run = new UploadRun({
      ctx,
      owner,
      token,
      plan,
      name: `${ctx.seed}/uploader-${index}/${n}`,
      worker: `uploader-${index}`,
    });
    const outcome = await run.run();
    ctx.stats.uploads[outcome] = (ctx.stats.uploads[outcome] ?? 0) + 1;
    await new Promise((r) => setTimeout(r, prng.int(0, 300)));
  }
}

module.exports = { planUpload, UploadRun, uploaderLoop };
