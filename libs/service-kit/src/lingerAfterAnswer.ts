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
export function lingerAfterAnswer(req: IncomingMessage, res: ServerResponse, limits = LINGER): void {
  res.once('finish', () => {
    if (req.readableEnded || req.destroyed) return;
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
    req.once('end', stop);
    req.once('close', stop);
    req.resume();
  });
}
