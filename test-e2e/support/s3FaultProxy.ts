// A proxy in front of an S3 server that passes every call through, streamed, except those a test
// chose to answer itself or to cut: a storage server's wrong answers, made on purpose.
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What to do with one call: pass it on, answer it here (without S3 seeing it), or cut its connection. */
export type S3Fault =
  | { kind: 'pass' }
  | { kind: 'answer'; status: number; body: string }
  | { kind: 'cut' }
  /** Passes it on, and runs `meanwhile` once S3 has the whole request (its answer still to come). */
  | { kind: 'watch'; meanwhile: () => Promise<void> };

/** A call as the proxy sees it: method, path and query (`uploadId`, `partNumber`). */
export interface S3Call {
  method: string;
  path: string;
  query: URLSearchParams;
}

/** Whether the call is a CompleteMultipartUpload (POST with an uploadId). */
export const isCompletion = (call: S3Call): boolean => call.method === 'POST' && call.query.has('uploadId');

/** CompleteMultipartUpload's success, as S3 answers it (the ETag is of no object: none was made). */
export function completionAnswer(call: S3Call): { kind: 'answer'; status: number; body: string } {
  const [, bucket, ...key] = call.path.split('/');
  const body =
    '<?xml version="1.0" encoding="UTF-8"?>\n' +
    '<CompleteMultipartUploadResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">' +
    `<Location>${call.path}</Location><Bucket>${bucket}</Bucket><Key>${key.join('/')}</Key>` +
    '<ETag>"00000000000000000000000000000000-2"</ETag></CompleteMultipartUploadResult>';
  return { kind: 'answer', status: 200, body };
}

export class S3FaultProxy {
  /** Every call seen, `METHOD path?query`. */
  readonly calls: string[] = [];
  /** Decides each call; pass everything by default. */
  decide: (call: S3Call) => S3Fault = () => ({ kind: 'pass' });
  private readonly server: Server;
  url = '';

  constructor(private readonly s3Port: number) {
    this.server = createServer((req, res) => this.handle(req, res));
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url!, 'http://s3');
    const call = { method: req.method!, path: decodeURIComponent(url.pathname), query: url.searchParams };
    this.calls.push(`${call.method} ${url.pathname}${url.search}`);
    const fault = this.decide(call);
    if (fault.kind === 'cut') {
      req.resume();
      req.socket.destroy();
      return;
    }
    if (fault.kind === 'answer') {
      req.resume();
      req.once('end', () => {
        res.writeHead(fault.status, {
          'content-type': 'application/xml',
          'content-length': Buffer.byteLength(fault.body),
        });
        res.end(fault.body);
      });
      return;
    }
    const upstream = request(
      { host: '127.0.0.1', port: this.s3Port, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode!, answer.rawHeaders);
        answer.pipe(res);
        answer.on('error', () => res.destroy());
      },
    );
    upstream.on('error', () => res.destroy());
    if (fault.kind === 'watch') req.once('end', () => void fault.meanwhile());
    req.pipe(upstream);
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}
