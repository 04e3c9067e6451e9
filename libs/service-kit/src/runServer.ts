import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Logger } from '@cp/logging';

export interface RunServerOptions {
  port: number;
  host?: string;
  logger: Logger;
  /** How long in-flight requests may run after SIGTERM before the process gives up on them. */
  shutdownGraceMs: number;
  /** Idle time allowed on a request body or response; long enough for a 64 MiB part on a slow link. */
  requestTimeoutMs?: number;
  /** Called once the server has stopped taking requests (close pools here). */
  onShutdown?: () => Promise<void>;
  /** Set when shutting down begins, so /readyz can fail at once. */
  onDraining?: () => void;
  maxHeaderSize?: number;
  /** False leaves a missing Host to the app (Node's own check answers a bare 400). */
  requireHostHeader?: boolean;
  /** A connection silent for `requestTimeoutMs`; by default it is dropped without an answer. */
  onIdleTimeout?: (socket: Socket) => void;
  /** Called with the server before it listens: for 'clientError', 'checkContinue' and the like. */
  configure?: (server: Server) => void;
  /**
   * The high-water mark of every connection's socket, both ways, and so of each request and
   * response (Node's default: 64 KiB). A response piped from a stream of 64 KiB chunks fills a
   * 64 KiB mark with each chunk, so every chunk cost a pause, a 'drain' and a resume; the services
   * that stream bodies set BODY_SOCKET_HIGH_WATER_MARK. It bounds what a connection buffers.
   */
  socketHighWaterMark?: number;
}

/** The socket high-water mark of the services that stream contents (gateway, content-service). */
export const BODY_SOCKET_HIGH_WATER_MARK = 256 * 1024;

export interface RunningServer {
  server: Server;
  port: number;
  shutdown: () => Promise<void>;
}

/**
 * Listens, and on SIGTERM/SIGINT drains: readiness fails, the listener closes, idle keep-alive
 * connections are dropped, in-flight requests get `shutdownGraceMs` to finish, then pools close
 * and the process exits 0.
 */
export async function runServer(app: RequestListener, options: RunServerOptions): Promise<RunningServer> {
  const { logger } = options;
  const server = createServer(
    {
      maxHeaderSize: options.maxHeaderSize ?? 16 * 1024,
      requestTimeout: 0, // uploads of 64 MiB on slow links: bounded by the idle timeout below instead
      headersTimeout: 30_000,
      keepAliveTimeout: 65_000,
      requireHostHeader: options.requireHostHeader ?? true,
      ...(options.socketHighWaterMark ? { highWaterMark: options.socketHighWaterMark } : {}),
    },
    app,
  );
  options.configure?.(server);
  server.setTimeout(options.requestTimeoutMs ?? 120_000, options.onIdleTimeout ?? ((socket) => socket.destroy()));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host ?? '0.0.0.0', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  logger.info({ port }, 'listening');

  let stopping: Promise<void> | undefined;
  const shutdown = (): Promise<void> => {
    stopping ??= (async () => {
      logger.info({ graceMs: options.shutdownGraceMs }, 'shutting down: draining in-flight requests');
      options.onDraining?.();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const idleSweep = setInterval(() => server.closeIdleConnections(), 250);
      const deadline = new Promise<'timeout'>((resolve) =>
        setTimeout(() => resolve('timeout'), options.shutdownGraceMs).unref(),
      );
      const outcome = await Promise.race([closed.then(() => 'drained' as const), deadline]);
      clearInterval(idleSweep);
      if (outcome === 'timeout') {
        logger.warn('grace period over: closing remaining connections');
        server.closeAllConnections();
      }
      await options.onShutdown?.();
      logger.info('stopped');
    })();
    return stopping;
  };
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => {
      shutdown().then(
        () => process.exit(0),
        (error: unknown) => {
          logger.error({ err: error }, 'shutdown failed');
          process.exit(1);
        },
      );
    });
  }
  return { server, port, shutdown };
}
