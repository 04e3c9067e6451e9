import type { IncomingMessage, ServerResponse } from 'node:http';

/** How long a refused body may pause, and how long it may take in all, before its connection is closed. */
export const LINGER = { idleMs: 1_000, totalMs: 10_000 };

/**
 * For an answer sent before the request's body was read to its end (a refusal from the headers, a
 * backing server down): once the answer is out, the rest of the body is read and dropped while it
 * keeps coming, each chunk within `idleMs` and all of it within `totalMs`; past either, the
 * connection is closed. Closing at once would reset the connection under a client (or a proxy)
 * still sending, and the reset can reach it before the answer does: it would see a broken
 * connection, or a proxy's 503, instead of the answer (lingering close, as in nginx).
 */
export function lingerAfterAnswer(
  req: IncomingMessage,
  res: ServerResponse,
  limits = LINGER,
  atEnd: 'keep' | 'close' = 'keep',
): void {
  res.once('finish', () => {
    if (req.readableEnded || req.destroyed) {
      if (atEnd === 'close') req.socket.destroy();
      return;
    }
    const close = () => {
      stop();
      req.socket.destroy();
    };
    const total = setTimeout(close, limits.totalMs);
    const idle = setTimeout(close, limits.idleMs);
    const onData = () => idle.refresh();
    const stop = () => {
      clearTimeout(total);
      clearTimeout(idle);
      req.off('data', onData);
    };
    req.on('data', onData);
    req.once('end', atEnd === 'close' ? close : stop);
    req.once('close', stop);
    req.resume();
  });
}

/**
 * An answer with `Connection: close` sent before the request's body was read (a refusal from the
 * head, an upstream down), closed the lingering way: Node's server would destroy the socket as soon
 * as the answer is out, resetting it under a client still sending (which then sees EPIPE or
 * ECONNRESET, not the answer). Instead the answer ends with a FIN, the rest of the body is read and
 * dropped within lingerAfterAnswer's limits, and the socket is destroyed at the body's end or when
 * they run out.
 */
export function closeAfterAnswer(req: IncomingMessage, res: ServerResponse, limits = LINGER): void {
  res.setHeader('Connection', 'close');
  if (req.readableEnded) return;
  const socket = req.socket;
  // Called by the server once an answer with Connection: close is out; end() leaves reading open.
  Object.defineProperty(socket, 'destroySoon', { value: () => socket.end(), configurable: true });
  lingerAfterAnswer(req, res, limits, 'close');
}

/** Whether a Connection header's value (a token list, any case) names `close`. */
export function namesClose(connection: unknown): boolean {
  return String(connection ?? '')
    .split(',')
    .some((token) => token.trim().toLowerCase() === 'close');
}
