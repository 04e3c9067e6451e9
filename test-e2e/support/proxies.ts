// Small real HTTP proxies for the client's proxy tests: a forward proxy (absolute-form requests
// for http:// and CONNECT tunnels for https://) that counts what passes through it, and a TLS
// front that serves the gateway over HTTPS. Both stream bodies; neither buffers.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import { connect, createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openssl } from './pki';

/** A port on 127.0.0.1 that nothing listens on (found by listening and closing). */
export async function closedPort(): Promise<number> {
  const s = createNetServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const { port } = s.address() as AddressInfo;
  await new Promise((resolve) => s.close(resolve));
  return port;
}

function listen(server: Server): Promise<number> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
}

function pass(req: IncomingMessage, res: ServerResponse, port: number, path: string): void {
  const upstream = request({ host: '127.0.0.1', port, method: req.method, path, headers: req.headers }, (answer) => {
    res.writeHead(answer.statusCode!, answer.rawHeaders);
    answer.pipe(res);
  });
  upstream.on('error', () => res.destroy());
  req.pipe(upstream);
}

/**
 * A forward proxy on 127.0.0.1. `routes` maps the ports clients ask for (closed ones, so a request
 * that bypasses the proxy fails) to the ports it really connects to on 127.0.0.1.
 */
export class CountingProxy {
  /** `METHOD path` of every request forwarded in absolute form (plain HTTP). */
  readonly forwarded: string[] = [];
  /** `host:port` of every CONNECT tunnel opened (HTTPS). */
  readonly tunnels: string[] = [];
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();
  url = '';

  constructor(private readonly routes: Record<number, number>) {
    this.server = createServer((req, res) => {
      const target = new URL(req.url!);
      this.forwarded.push(`${req.method} ${target.pathname}`);
      pass(req, res, this.route(Number(target.port)), `${target.pathname}${target.search}`);
    });
    this.server.on('connect', (req: IncomingMessage, client: Socket, head: Buffer) => {
      this.tunnels.push(req.url!);
      const port = this.route(Number(req.url!.split(':').pop()));
      const upstream = connect(port, '127.0.0.1');
      this.sockets.add(upstream).add(client);
      upstream.on('error', () => client.destroy());
      client.on('error', () => upstream.destroy());
      upstream.on('connect', () => {
        client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        upstream.write(head);
        upstream.pipe(client).pipe(upstream);
      });
    });
  }

  private route(port: number): number {
    return this.routes[port] ?? port;
  }

  async start(): Promise<this> {
    this.url = `http://127.0.0.1:${await listen(this.server)}`;
    return this;
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

/** The gateway over HTTPS, with a self-signed certificate for 127.0.0.1 (trust it with NODE_EXTRA_CA_CERTS). */
export class TlsFront {
  /** `METHOD path` of every request it passed on. */
  readonly seen: string[] = [];
  readonly certPath: string;
  private readonly server: Server;
  port = 0;

  constructor(gatewayPort: number) {
    const dir = mkdtempSync(join(tmpdir(), 'cp-tls-front-'));
    const keyPath = join(dir, 'front.key');
    this.certPath = join(dir, 'front.pem');
    openssl([
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-days',
      '1',
      '-subj',
      `/CN=content-front-${randomUUID().slice(0, 8)}`,
      '-addext',
      'subjectAltName=IP:127.0.0.1',
      '-keyout',
      keyPath,
      '-out',
      this.certPath,
    ]);
    this.server = createTlsServer({ key: readFileSync(keyPath), cert: readFileSync(this.certPath) }, (req, res) => {
      this.seen.push(`${req.method} ${new URL(req.url!, 'https://x').pathname}`);
      pass(req, res, gatewayPort, req.url!);
    });
  }

  async start(): Promise<this> {
    this.port = await listen(this.server);
    return this;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}
