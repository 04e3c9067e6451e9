import { createHash, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What a hook makes of a request: an answer instead of the normal one, a dropped connection, or nothing. */
export type Intercept =
  { status: number; headers?: Record<string, string>; body?: unknown } | 'drop' | 'drop-mid-body' | undefined;

export interface Seen {
  method: string;
  path: string;
  range: string | undefined;
  authorization: string | undefined;
  /** The query string, `?` included, or ''. */
  query: string;
  headers: IncomingMessage['headers'];
  /** When it arrived (Date.now()). */
  at: number;
}

interface StoredContent {
  total: number | null;
  parts: Map<number, Buffer>;
}

/**
 * A small in-process stand-in for the gateway's HTTP surface (/v1 contents, refresh) so unit tests
 * can make it fail in exact ways: 503 with Retry-After, dropped connections, 401 after a sid expires.
 * The e2e tests run the same client against the real services.
 */
export class FakeContentApi {
  readonly seen: Seen[] = [];
  readonly contents = new Map<string, StoredContent>();
  sid = 'SID-1';
  refreshToken = 'RT-1';
  refreshes = 0;
  inFlight = 0;
  maxInFlight = 0;
  /** Called for every request before it is handled. */
  intercept: (seen: Seen, n: number) => Intercept = () => undefined;
  /** Called before a successful PUT answer is sent (a test may hold it back). */
  beforeAnswer: (seen: Seen) => Promise<void> = async () => undefined;
  /**
   * A 'drop-mid-body' breaks the connection 50 ms after this holds (polled every 5 ms, at most 5 s),
   * so a test can wait until the client has written what came; by default 50 ms after the half was sent.
   */
  breakWhen: (() => boolean) | null = null;
  /** The Repr-Digest a HEAD of a ready content answers (none when it gives undefined). */
  reprDigest: (bytes: Buffer) => string | undefined = () => undefined;
  private server: Server | null = null;

  /** Listens on `port` (0: any free one); after `stop()` it can start again on the same port with what it stored. */
  async start(port = 0): Promise<string> {
    this.server = createServer((req, res) => void this.handle(req, res).catch(() => res.destroy()));
    await new Promise<void>((resolve) => this.server!.listen(port, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((resolve) => this.server?.close(resolve));
  }

  /** The bytes received for a content, in order (gaps make this throw). */
  bytesOf(id: string): Buffer {
    const c = this.contents.get(id)!;
    const starts = [...c.parts.keys()].sort((a, b) => a - b);
    let next = 0;
    for (const s of starts) {
      if (s !== next) throw new Error(`gap at ${next}`);
      next += c.parts.get(s)!.length;
    }
    return Buffer.concat(starts.map((s) => c.parts.get(s)!));
  }

  count(method: string, range?: string): number {
    return this.seen.filter((s) => s.method === method && (range === undefined || s.range === range)).length;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url!, 'http://x');
    const seen: Seen = {
      method: req.method!,
      path: url.pathname,
      range: (req.headers['content-range'] ?? req.headers.range) as string | undefined,
      authorization: req.headers.authorization,
      query: url.search,
      headers: req.headers,
      at: Date.now(),
    };
    this.seen.push(seen);
    const n = this.seen.filter(
      (s) =>
        s.method === seen.method && s.range === seen.range && s.path.split('/').length === seen.path.split('/').length,
    ).length;
    const forced = this.intercept(seen, n);
    if (forced === 'drop') {
      req.socket.destroy();
      return;
    }
    if (forced && forced !== 'drop-mid-body') {
      await drain(req);
      return json(
        res,
        forced.status,
        forced.body ?? {
          id: `urn:error:contents:http${forced.status}`,
          'status-code': forced.status,
          message: 'forced',
          'track-id': 't',
        },
        forced.headers,
      );
    }
    if (url.pathname === '/sessions/v5.13/sessions/refresh') {
      await drain(req);
      this.refreshes++;
      // Its inputs come in headers only (the query string would land in access logs).
      if (url.search !== '')
        return json(res, 400, { Code: 'MissingParameters', Message: 'send the refresh inputs in headers' });
      if (!String(req.headers.authorization).startsWith('auth.sid '))
        return json(res, 400, { Code: 'MissingParameters', Message: 'no auth.sid' });
      if (!req.headers['x-kontur-apikey']) return json(res, 400, { Code: 'MissingParameters', Message: 'no api key' });
      if (req.headers['x-refresh-token'] !== this.refreshToken)
        return json(res, 403, { Code: 'RefreshTokenReused', Message: 'used already' });
      this.sid = `SID-${this.refreshes + 1}`;
      this.refreshToken = `RT-${this.refreshes + 1}`;
      return json(res, 200, { Sid: this.sid, RefreshToken: this.refreshToken });
    }
    if (req.headers.authorization !== 'Bearer ok' && req.headers.authorization !== `auth.sid ${this.sid}`) {
      await drain(req);
      return json(res, 401, {
        id: 'urn:error:contents:invalidSession',
        'status-code': 401,
        message: 'no',
        'track-id': 't',
      });
    }
    const m = /^\/v1\/([^/]+)\/contents(?:\/([^/]+))?$/.exec(url.pathname);
    if (!m) return json(res, 404, {});
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    try {
      if (req.method === 'POST' || req.method === 'PUT') {
        const body = await drain(req);
        // As the service: a body whose SHA-256 is not its Content-Digest's is refused, and nothing kept.
        const digest = /sha-256=:([^:]*):/.exec(String(req.headers['content-digest'] ?? ''))?.[1];
        if (digest !== undefined && digest !== createHash('sha256').update(body).digest('base64'))
          return json(res, 400, { id: 'urn:error:contents:contentDigestMismatch', 'status-code': 400 });
        const id = m[2] ?? randomUUID();
        if (!this.contents.has(id)) this.contents.set(id, { total: null, parts: new Map() });
        const c = this.contents.get(id)!;
        const cr = req.headers['content-range'];
        if (cr === undefined) c.total = body.length;
        const r = cr === undefined ? null : /^bytes (\d+)-(\d+)\/(\d+|\*)$/.exec(cr);
        if (cr !== undefined && (!r || Number(r[2]) - Number(r[1]) + 1 !== body.length))
          return json(res, 400, { id: 'urn:error:contents:invalidRange' });
        if (r && r[3] !== '*') c.total = Number(r[3]);
        if (body.length > 0 || !r) c.parts.set(r ? Number(r[1]) : 0, body);
        await this.beforeAnswer(seen);
        if (req.method === 'POST') return json(res, 201, { id });
        const done = this.ready(c);
        return json(res, done ? 201 : 200, { id, content: { id }, 'is-completed': done });
      }
      const c = this.contents.get(m[2]!);
      if (!c)
        return json(res, 404, {
          id: 'urn:error:contents:contentNotFound',
          'status-code': 404,
          message: 'no such content',
          'track-id': 't',
        });
      if (req.method === 'HEAD') {
        const received = [...c.parts.entries()].sort((a, b) => a[0] - b[0]).map(([s, b]) => `${s}-${s + b.length - 1}`);
        res.writeHead(200, {
          'x-upload-state': this.ready(c) ? 'ready' : 'uploading',
          'x-content-total': c.total ?? '',
          'x-received-ranges': received.join(','),
          etag: '"e"',
          ...(this.ready(c) && this.reprDigest(this.bytesOf(m[2]!)) !== undefined
            ? { 'repr-digest': this.reprDigest(this.bytesOf(m[2]!)) }
            : {}),
        });
        return void res.end();
      }
      // GET with Range: bytes=a-b
      const data = this.bytesOf(m[2]!);
      const g = /^bytes=(\d+)-(\d+)$/.exec(String(req.headers.range))!;
      const a = Number(g[1]);
      const b = Math.min(Number(g[2]), data.length - 1);
      const slice = data.subarray(a, b + 1);
      res.writeHead(206, { 'content-range': `bytes ${a}-${b}/${data.length}`, 'content-length': slice.length });
      if (forced === 'drop-mid-body') {
        res.write(slice.subarray(0, slice.length >> 1));
        // Once the client has written what came (a real break comes after megabytes).
        const until = Date.now() + 5_000;
        const breakOff = () => {
          // 50 ms more once it holds: the client's write callback comes after the bytes are in the file.
          if (this.breakWhen === null || this.breakWhen() || Date.now() > until)
            setTimeout(() => req.socket.destroy(), this.breakWhen === null ? 0 : 50);
          else setTimeout(breakOff, 5);
        };
        setTimeout(breakOff, this.breakWhen === null ? 50 : 0);
        return;
      }
      res.end(slice);
    } finally {
      this.inFlight--;
    }
  }

  private ready(c: StoredContent): boolean {
    if (c.total === null) return false;
    let have = 0;
    for (const b of c.parts.values()) have += b.length;
    return have === c.total;
  }
}

async function drain(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const data = Buffer.from(JSON.stringify(body));
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': data.length,
    ...headers,
  });
  res.end(data);
}
