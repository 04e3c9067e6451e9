// The soak's HTTP client: one request at a time with node:http (heads up to 512 KiB, for long
// X-Received-Ranges), every answer recorded, and the bounded retries a real client makes:
// connection errors, 502, 503 and 504 (and 500, recorded as a finding) are sent again after
// Retry-After (at most 2 s) until the request's budget (60 s) is spent.
const http = require('node:http');
const { createHash } = require('node:crypto');

const agent = new http.Agent({ keepAlive: true, maxSockets: 128 });
const RETRIED = new Set([500, 502, 503, 504]);

class SoakHttp {
  /**
   * @param {object} o
   * @param {(entry: object) => void} o.journal where notable answers are written
   * @param {() => number} o.now seconds since the soak began
   */
  constructor({ journal, now }) {
    this.journal = journal;
    this.now = now;
    /** Every 5xx answer: { at, sentAt, status, errorId, method, path, requestId, worker, body }. */
    this.serverErrors = [];
    this.statusCounts = new Map();
    this.connectionErrors = 0;
    /** Requests whose budget ran out on errors: { from, at, method, path, status, errorId, worker, requestId }. */
    this.exhausted = [];
  }

  /**
   * One attempt. `hash` streams the answer's body into a SHA-256 instead of keeping it.
   * Resolves { status, headers, body, sha256, bytes } or { error }.
   */
  once({ method, url, headers = {}, body, hash = false, idleMs = 30_000, worker = '' }) {
    const sentAt = this.now();
    return new Promise((resolve) => {
      let settled = false;
      const done = (result) => {
        if (settled) return;
        settled = true;
        resolve({ ...result, sentAt, at: this.now() });
      };
      const h = { ...headers };
      if (body !== undefined) h['content-length'] = String(body.length);
      const req = http.request(url, { method, headers: h, agent, maxHeaderSize: 512 * 1024 }, (res) => {
        const digest = hash ? createHash('sha256') : null;
        const chunks = [];
        let bytes = 0;
        res.on('data', (c) => {
          bytes += c.length;
          if (digest) digest.update(c);
          else chunks.push(c);
        });
        res.on('end', () =>
          done({
            status: res.statusCode,
            headers: res.headers,
            body: digest ? null : Buffer.concat(chunks),
            sha256: digest ? digest.digest('base64') : null,
            bytes,
          }),
        );
        res.on('error', (error) => done({ error }));
        res.on('aborted', () => done({ error: new Error('answer aborted') }));
      });
      req.setTimeout(idleMs, () => req.destroy(new Error(`no progress for ${idleMs} ms`)));
      req.on('error', (error) => done({ error }));
      req.end(body);
    }).then((r) => this.record(r, method, url, headers, worker));
  }

  record(r, method, url, headers, worker) {
    if (r.error) {
      this.connectionErrors++;
      return r;
    }
    this.statusCounts.set(r.status, (this.statusCounts.get(r.status) ?? 0) + 1);
    if (r.status >= 500) {
      const entry = {
        at: r.at,
        sentAt: r.sentAt,
        status: r.status,
        errorId: errorIdOf(r),
        method,
        path: new URL(url).pathname,
        range: headers['content-range'] ?? headers.range,
        requestId: r.headers['x-request-id'],
        worker,
        body: r.body ? r.body.toString('utf8', 0, 400) : undefined,
      };
      this.serverErrors.push(entry);
      if (r.status === 500) this.journal({ kind: 'http500', ...entry });
    }
    return r;
  }

  /**
   * The request sent again on connection errors and 5xx until it gets another answer or its budget
   * runs out. `body` may be a function (made again for each attempt). Resolves the last answer with
   * `attempts`, `retried` (an earlier attempt failed) and `exhausted` (the budget ran out).
   */
  async send(opts, { budgetMs = 60_000, until } = {}) {
    const started = Date.now();
    let attempts = 0;
    let retried = false;
    let wait = 200;
    for (;;) {
      attempts++;
      const body = typeof opts.body === 'function' ? opts.body() : opts.body;
      const r = await this.once({ ...opts, body });
      const again = r.error || RETRIED.has(r.status);
      if (!again) return { ...r, attempts, retried };
      retried = true;
      const retryAfter = Number(r.headers?.['retry-after']);
      const pause = Math.min(2000, Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter * 1000 : wait);
      wait = Math.min(2000, wait * 2);
      if (until && until()) return { ...r, attempts, retried, exhausted: true };
      if (Date.now() - started + pause > budgetMs) {
        this.exhausted.push({
          from: r.at - (Date.now() - started) / 1000,
          at: r.at,
          method: opts.method,
          path: new URL(opts.url).pathname,
          range: opts.headers?.['content-range'] ?? opts.headers?.range,
          status: r.status,
          error: r.error?.message,
          errorId: errorIdOf(r),
          requestId: r.headers?.['x-request-id'],
          worker: opts.worker,
          attempts,
        });
        return { ...r, attempts, retried, exhausted: true };
      }
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }
}

/** The `urn:error:...` id of a /v1 answer, or the Code of an /auth or /sessions one. */
function errorIdOf(r) {
  if (!r || r.error || r.status < 400) return undefined;
  if (r.headers?.['x-error-id']) return r.headers['x-error-id'];
  try {
    const j = JSON.parse(r.body.toString());
    return j.id ?? j.Code;
  } catch {
    return undefined;
  }
}

function json(r) {
  try {
    return JSON.parse(r.body.toString());
  } catch {
    return null;
  }
}

module.exports = { SoakHttp, errorIdOf, json, agent };
