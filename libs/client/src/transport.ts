import { Agent as HttpAgent, request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ApiError, TransportError } from './errors';

export interface Sent {
  method: string;
  url: URL;
  headers: Record<string, string>;
  /** Made anew for every attempt, so a retried part is read from disk again. */
  body?: () => Readable | Buffer;
  contentLength?: number;
  signal?: AbortSignal;
  /** Where a successful answer's body goes (a file region); otherwise it is read as text. */
  sink?: () => Writable;
}

export interface Received {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  /** The body's bytes (empty when it went to a sink). */
  bytes: Buffer;
}

/** Where HTTP_PROXY, HTTPS_PROXY and NO_PROXY (or their lower-case forms, which win) are read from. */
export type ProxyEnv = Record<string, string | undefined>;

/**
 * HTTP/1.1 with kept-alive connections; error answers become ApiError, failures TransportError.
 * Every request goes through one of its two agents, which apply the proxy variables of `proxyEnv`
 * (Node's own proxy support: plain HTTP is forwarded, HTTPS tunnelled with CONNECT; NO_PROXY
 * hosts go direct). Bodies stream through a proxy as they do without one.
 */
/** How long a connection may stay silent before its attempt fails: a read (HEAD, GET), a write. */
export const READ_SILENCE_MS = 60_000;
export const WRITE_SILENCE_MS = 330_000;

export class Transport {
  private readonly http: HttpAgent;
  private readonly https: HttpsAgent;
  /** Requests sent, retries included (tests count them). */
  requests = 0;

  constructor(
    proxyEnv: ProxyEnv | null = null,
    private readonly silenceMs = { read: READ_SILENCE_MS, write: WRITE_SILENCE_MS },
  ) {
    // `proxyEnv: undefined` would let NODE_USE_ENV_PROXY decide; an explicit object (empty: no proxy) does not.
    const proxy = { proxyEnv: proxyVariables(proxyEnv) };
    this.http = new HttpAgent({ keepAlive: true, maxSockets: 64, ...proxy });
    this.https = new HttpsAgent({ keepAlive: true, maxSockets: 64, ...proxy });
  }

  async send(req: Sent): Promise<Received> {
    this.requests++;
    const secure = req.url.protocol === 'https:';
    const headers: Record<string, string | number> = { ...req.headers };
    if (req.contentLength !== undefined) headers['content-length'] = req.contentLength;
    // Any failure on the way (connect, send, a connection dropped mid-answer) is a TransportError,
    // which the caller retries; an abort stays the abort's reason.
    const failed = (error: unknown): Error => {
      if (req.signal?.aborted) return (req.signal.reason as Error) ?? (error as Error);
      if (error instanceof ApiError || error instanceof TransportError) return error;
      return new TransportError(`${req.method} ${req.url.pathname}: ${(error as Error)?.message ?? String(error)}`, {
        cause: error,
      });
    };
    let started: ClientRequest | undefined;
    let body: Readable | Buffer | undefined;
    try {
      return await new Promise<Received>((resolve, reject) => {
        started = (secure ? httpsRequest : httpRequest)(
          req.url,
          // maxHeaderSize: a resumed upload's X-Received-Ranges may pass Node's 16 KiB.
          {
            method: req.method,
            headers,
            agent: secure ? this.https : this.http,
            signal: req.signal,
            maxHeaderSize: 256 * 1024,
          },
          (res) => void this.receive(res, req).then(resolve, reject),
        );
        started.on('error', reject);
        // A connection silent this long (a stuck server, a dead link) fails the attempt, which is
        // retried within --retry-for: longer for a write, whose answer waits for S3 (the gateway gives up at 300 s).
        const silenceMs = req.body ? this.silenceMs.write : this.silenceMs.read;
        started.setTimeout(silenceMs, () =>
          started?.destroy(new Error(`the connection was silent for ${silenceMs / 1000} s`)),
        );
        body = req.body?.();
        if (body === undefined) started.end();
        else if (Buffer.isBuffer(body)) started.end(body);
        else {
          const file = body;
          file.on('error', (error) => {
            reject(error);
            started?.destroy(error);
          });
          file.pipe(started);
        }
      });
    } catch (error) {
      throw failed(error);
    } finally {
      // An answer that came before the whole part was sent (an error, an abort) leaves the file
      // stream half read: close it rather than leak its descriptor.
      if (body !== undefined && !Buffer.isBuffer(body) && !body.destroyed) body.destroy();
    }
  }

  private async receive(res: IncomingMessage, req: Sent): Promise<Received> {
    const status = res.statusCode ?? 0;
    if (status < 300 && req.sink) {
      await pipeline(res, req.sink());
      if (!res.complete)
        throw new TransportError(`${req.method} ${req.url.pathname}: the answer broke off`, {
          code: 'ANSWER_BROKE_OFF',
        });
      return { status, headers: res.headers, text: '', bytes: Buffer.alloc(0) };
    }
    const chunks: Buffer[] = [];
    for await (const chunk of res) chunks.push(chunk as Buffer);
    const bytes = Buffer.concat(chunks);
    const text = bytes.toString('utf8');
    if (status >= 400) throw ApiError.fromResponse(status, text, res.headers);
    return { status, headers: res.headers, text, bytes };
  }

  close(): void {
    this.http.destroy();
    this.https.destroy();
  }
}

const PROXY_VARIABLES = ['HTTP_PROXY', 'http_proxy', 'HTTPS_PROXY', 'https_proxy', 'NO_PROXY', 'no_proxy'];

/** Only the proxy variables of an environment (a copy: later changes to it do not count). */
export function proxyVariables(env: ProxyEnv | null): Record<string, string> {
  const picked: Record<string, string> = {};
  for (const name of PROXY_VARIABLES) {
    const value = env?.[name];
    if (value !== undefined && value !== '') picked[name] = value;
  }
  return picked;
}
