import { connect, createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';

/** A request head the proxy passed on to the gateway. */
export interface ProxiedRequest {
  connection: number;
  method: string;
  path: string;
  /** Lower-cased names. */
  headers: Record<string, string>;
  bodyLength: number;
}

/**
 * A TCP proxy on 127.0.0.1 in front of the gateway. It reads the heads of the requests going
 * through (HTTP/1.1 with Content-Length bodies, as Chromium sends an XHR's Blob) and cuts the
 * connection of a request `cut.when` picks, both ways, after passing on `cut.afterBytes` of its
 * body: a network that drops mid-upload. Chromium resends by itself a request whose kept-alive
 * connection breaks before any answer (HttpNetworkTransaction::ShouldResendRequest), so one cut
 * alone never reaches the page: the proxy cuts each resend too, until the client asks where the
 * upload stands (a HEAD of a path it cut), which it does only once its XHR has failed.
 */
export class CuttingProxy {
  readonly requests: ProxiedRequest[] = [];
  readonly cuts: { request: ProxiedRequest; forwarded: number; at: number }[] = [];
  private readonly server = createNetServer((client) => this.relay(client, ++this.connections));
  private readonly sockets = new Set<Socket>();
  private connections = 0;
  /** Until the client's HEAD, after the first cut. */
  private cutting = true;
  url = '';

  constructor(
    private readonly upstreamPort: number,
    private readonly cut: {
      when: (request: ProxiedRequest) => boolean;
      afterBytes: number;
      /** Cuts at most this many requests (default: until the client's HEAD, above). */
      most?: number;
    },
  ) {}

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise((resolve) => this.server.close(resolve));
  }

  private relay(client: Socket, connection: number): void {
    const upstream = connect(this.upstreamPort, '127.0.0.1');
    for (const s of [client, upstream]) {
      this.sockets.add(s);
      s.on('error', () => undefined);
      s.on('close', () => {
        this.sockets.delete(s);
        client.destroy();
        upstream.destroy();
      });
    }
    upstream.pipe(client);
    client.on('end', () => upstream.end());

    let head = Buffer.alloc(0);
    let current: ProxiedRequest | undefined;
    let bodySent = 0;
    client.on('data', (chunk: Buffer) => {
      let at = 0;
      while (at < chunk.length) {
        if (!current) {
          head = Buffer.concat([head, chunk.subarray(at)]);
          const end = head.indexOf('\r\n\r\n');
          if (end < 0) break;
          at = chunk.length - (head.length - end - 4);
          current = this.parse(head.subarray(0, end).toString('latin1'), connection);
          head = Buffer.alloc(0);
          bodySent = 0;
        }
        const n = Math.min(current.bodyLength - bodySent, chunk.length - at);
        const more = this.cutting && this.cuts.length < (this.cut.most ?? Infinity);
        if (more && this.cut.when(current) && bodySent + n >= this.cut.afterBytes) {
          upstream.write(chunk.subarray(0, at + this.cut.afterBytes - bodySent));
          this.cuts.push({ request: current, forwarded: this.cut.afterBytes, at: Date.now() });
          // A reset, as a dropped route gives: Chromium sees the request fail, not end.
          client.resetAndDestroy();
          upstream.destroy();
          return;
        }
        bodySent += n;
        at += n;
        if (bodySent === current.bodyLength) current = undefined;
      }
      if (!upstream.write(chunk)) {
        client.pause();
        upstream.once('drain', () => client.resume());
      }
    });
  }

  private parse(text: string, connection: number): ProxiedRequest {
    const [requestLine, ...lines] = text.split('\r\n');
    const [method, path] = requestLine!.split(' ');
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(':');
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    const request = {
      connection,
      method: method!,
      path: path!,
      headers,
      bodyLength: Number(headers['content-length'] ?? 0),
    };
    this.requests.push(request);
    if (method === 'HEAD' && this.cuts.some((c) => c.request.path === path)) this.cutting = false;
    return request;
  }
}
