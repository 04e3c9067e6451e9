import { randomUUID } from 'node:crypto';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from '@cp/logging';
import { namesClose } from '@cp/service-kit';
import { upstreamFor, type Upstream } from './routes';
import { EdgeRefusal } from './edgeChecks';
import { gatewayErrorBody, gatewayErrorId, sendGatewayError } from './upstreamErrorBody';

/** Status and code for what Node's HTTP parser refuses, by its error code. */
function describe(error: NodeJS.ErrnoException): EdgeRefusal {
  switch (error.code) {
    case 'HPE_HEADER_OVERFLOW':
      return new EdgeRefusal('headersTooLarge', 'the request line and headers are too large');
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return new EdgeRefusal('chunkExtensionsTooLarge', 'the chunk extensions are too large');
    case 'ERR_HTTP_REQUEST_TIMEOUT':
    case 'ERR_HTTP_HEADERS_TIMEOUT':
      return new EdgeRefusal('requestTimeout', 'the request did not arrive in time');
    default:
      return new EdgeRefusal('malformedRequest', `the request is not valid HTTP/1.1 (${error.code ?? 'parse error'})`);
  }
}

/** The path of a request Node could not parse, from the bytes it was given, to pick the error format. */
function pathOf(error: Error & { rawPacket?: Buffer }, inFlight: IncomingMessage | undefined): string {
  if (inFlight?.url) return inFlight.url;
  const line = error.rawPacket?.subarray(0, 2048).toString('latin1').split(/\r?\n/)[0] ?? '';
  return line.split(' ')[1] ?? '/';
}

/**
 * Answers what Node's HTTP parser refuses (bad framing, bad headers, oversized heads, timeouts) in
 * the contract's error format with Connection: close, instead of Node's bare answer. An answer
 * never overtakes a request in flight on the same connection: requests whose bodies were complete
 * (e.g. junk pipelined after them) are answered first and the error after them; a request whose
 * body broke off is aborted upstream (which changes nothing) and the error answers it if nothing
 * has been sent yet.
 */
export function answerClientErrors(server: Server, logger: Logger): void {
  const handled = new WeakSet<Socket>();
  // The responses not yet finished on each connection, in request order (pipelining queues them).
  const unfinished = new WeakMap<Socket, Set<ServerResponse>>();
  // Each connection's latest response: once it said Connection: close (a refusal from the head,
  // say), nothing more may be written, though the bytes after its request may still fail to parse.
  const latest = new WeakMap<Socket, ServerResponse>();
  const closing = (socket: Socket): boolean => {
    const res = latest.get(socket);
    return !!res?.headersSent && (!res.shouldKeepAlive || namesClose(res.getHeader('connection')));
  };
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    let open = unfinished.get(req.socket);
    if (!open) unfinished.set(req.socket, (open = new Set()));
    open.add(res);
    latest.set(req.socket, res);
    const done = () => open.delete(res);
    res.once('finish', done);
    res.once('close', done);
  });

  // CONNECT (a tunnel) is no method of this API; Node would drop the connection without a word.
  server.on('connect', (req: IncomingMessage, socket: Socket) => {
    const refusal = new EdgeRefusal('malformedRequest', 'CONNECT is not supported');
    writeBareError(socket, upstreamFor((req.url ?? '/').split('?')[0]!), refusal, randomUUID());
  });

  server.on('clientError', (error: NodeJS.ErrnoException & { rawPacket?: Buffer }, socket: Socket) => {
    if (handled.has(socket)) return;
    handled.add(socket);
    if (error.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    socket.pause();
    const pending = [...(unfinished.get(socket) ?? [])].filter((r) => !r.writableFinished);
    // Once an answer said Connection: close, a second one would be junk to the client: the
    // connection only closes (a second later, so that the answer is read, not reset).
    const answer = () =>
      closing(socket)
        ? void setTimeout(() => socket.destroy(), 1000).unref()
        : writeBareError(socket, upstream, refusal, trackId);
    const last = pending.at(-1);
    const req = last?.req;
    const refusal = describe(error);
    const path = pathOf(error, req);
    const upstream = upstreamFor(path.split('?')[0] ?? '/');
    const trackId = req?.id ?? randomUUID();
    logger.info({ reqId: trackId, code: error.code, status: refusal.status }, 'client error');

    if (last && req && !req.complete) {
      // The body of the last request broke off: abort it upstream (closing the connection does)
      // and answer it with the error, when nothing of its answer or an earlier one is under way.
      if (pending.length === 1 && !last.headersSent) {
        last.setHeader('Connection', 'close');
        sendGatewayError(last, upstream, refusal, trackId, () => abort(req, socket));
        setTimeout(() => abort(req, socket), 1000).unref();
      } else {
        socket.destroy();
      }
      return;
    }
    if (pending.length === 0) {
      answer();
      return;
    }
    // The requests in flight are whole: their answers go first, then the error, then the close.
    let left = pending.length;
    for (const res of pending) {
      res.once('close', () => {
        if (!res.writableFinished) socket.destroy();
      });
      res.once('finish', () => {
        left -= 1;
        if (left === 0) answer();
      });
    }
  });
}

/** The error written straight to the socket, when no response object is there to carry it (as sendGatewayError words it). */
function writeBareError(
  socket: Socket,
  upstream: Upstream | null,
  { status, code, message }: EdgeRefusal,
  trackId: string,
): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const body = JSON.stringify(gatewayErrorBody(upstream, status, code, message, trackId));
  const errorId = gatewayErrorId(upstream, code);
  const reason =
    { 400: 'Bad Request', 408: 'Request Timeout', 413: 'Content Too Large', 431: 'Request Header Fields Too Large' }[
      status
    ] ?? 'Error';
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nX-Request-Id: ${trackId}\r\nContent-Type: application/json; charset=utf-8\r\n${errorId ? `X-Error-Id: ${errorId}\r\n` : ''}Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
  setTimeout(() => socket.destroy(), 1000).unref();
}

/**
 * `Expect` is decided by the app (edgeChecks): a head that can never succeed is refused without a
 * 100 Continue, otherwise the 100 is sent and the body read. Node would send the 100 (or a bare 417)
 * on its own before the app sees the request.
 */
export function deferExpectations(server: Server): void {
  const passOn = (req: IncomingMessage, res: ServerResponse) => server.emit('request', req, res);
  server.on('checkContinue', passOn);
  server.on('checkExpectation', passOn);
}

/**
 * A client silent mid-body for the idle timeout gets 408 in its API's error format (its upstream
 * request is aborted by the close, which stores nothing); any other idle connection is dropped.
 */
export function answerIdleTimeout(socket: Socket): void {
  const res = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage;
  // Only a request whose body stopped coming: a whole one is waiting on its upstream, whose answer
  // (or 504 at UPSTREAM_TIMEOUT_MS) must not be overtaken.
  if (!res || res.headersSent || res.req.complete || !socket.writable) {
    socket.destroy();
    return;
  }
  const upstream = upstreamFor((res.req.url ?? '/').split('?')[0] ?? '/');
  const refusal = new EdgeRefusal('requestTimeout', 'the request went silent for too long; send it again');
  res.setHeader('Connection', 'close');
  sendGatewayError(res, upstream, refusal, res.req.id, () => abort(res.req, socket));
  setTimeout(() => abort(res.req, socket), 1000).unref();
}

/**
 * Ends a request whose body never completed, after its answer went out. Once a response has
 * finished, Node no longer counts its request as in flight, so closing the socket alone would not
 * abort it: the proxy would keep the upstream request open (and the content-service its part
 * claim) until a timeout. Destroying the request aborts the proxied one at once.
 */
function abort(req: IncomingMessage, socket: Socket): void {
  if (!req.destroyed) req.destroy();
  socket.destroy();
}
