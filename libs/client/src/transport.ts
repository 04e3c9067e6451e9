import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
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
}

/** HTTP/1.1 with kept-alive connections; error answers become ApiError, failures TransportError. */
export class Transport {
  private readonly http = new HttpAgent({ keepAlive: true, maxSockets: 64 });
  private readonly https = new HttpsAgent({ keepAlive: true, maxSockets: 64 });
  /** Requests sent, retries included (tests count them). */
  requests = 0;

  async send(req: Sent): Promise<Received> {
    this.requests++;
    const secure = req.url.protocol === 'https:';
    const headers: Record<string, string | number> = { ...req.headers };
    if (req.contentLength !== undefined) headers['content-length'] = req.contentLength;
    return new Promise<Received>((resolve, reject) => {
      const started = (secure ? httpsRequest : httpRequest)(
        req.url,
        { method: req.method, headers, agent: secure ? this.https : this.http, signal: req.signal },
        (res) => void this.receive(res, req).then(resolve, reject),
      );
      started.on('error', (error) => reject(req.signal?.aborted ? req.signal.reason ?? error : new TransportError(`${req.method} ${req.url.pathname}: ${error.message}`, { cause: error })));
      const body = req.body?.();
      if (body === undefined) started.end();
      else if (Buffer.isBuffer(body)) started.end(body);
      else {
        body.on('error', (error) => started.destroy(error));
        body.pipe(started);
      }
    });
  }

  private async receive(res: IncomingMessage, req: Sent): Promise<Received> {
    const status = res.statusCode ?? 0;
    if (status < 300 && req.sink) {
      await pipeline(res, req.sink());
      return { status, headers: res.headers, text: '' };
    }
    const chunks: Buffer[] = [];
    for await (const chunk of res) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    if (status >= 400) throw ApiError.fromResponse(status, text, res.headers);
    return { status, headers: res.headers, text };
  }

  close(): void {
    this.http.destroy();
    this.https.destroy();
  }
}
