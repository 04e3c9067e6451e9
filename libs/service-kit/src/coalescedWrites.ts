import type { ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import { whenDone } from './whenDone';

/**
 * Sends what `body` gives in one turn of the event loop to the response's socket as one write:
 * the socket is corked at the turn's first chunk and uncorked once the turn's I/O is done
 * (setImmediate), so the chunks read meanwhile (libuv reads a ready socket up to 32 times of
 * 64 KiB per turn) go out in one writev. Under a reader that takes less than it is offered (curl,
 * a browser, a 16 KiB reader) each write otherwise carried one 64 KiB chunk and woke the next
 * hop once per chunk. Call before piping `body` into `res`; the pipe itself is unchanged, and so
 * are its backpressure and its memory bound (the response's high-water mark).
 */
export function coalesceWrites(body: Readable, res: ServerResponse): void {
  let corked = false;
  body.on('data', () => {
    const socket = res.socket;
    if (corked || !socket || socket.destroyed) return;
    corked = true;
    socket.cork();
    setImmediate(() => {
      corked = false;
      socket.uncork();
    });
  });
}

/**
 * Pipes `body` into the response, its writes coalesced (coalesceWrites), and settles when the
 * response is done: resolves once it finished; rejects, with both streams destroyed, when the body
 * failed or the connection closed first. Backpressure and the memory bound are the pipe's. It is
 * stream.pipeline() for this one pair, without the AbortController pipeline aborts at every end,
 * which builds a DOMException (and its stack) for each response.
 */
export function sendBody(body: Readable, res: ServerResponse): Promise<void> {
  coalesceWrites(body, res);
  return new Promise((resolve, reject) => {
    const fail = (error: Error) => {
      body.destroy();
      res.destroy();
      reject(error);
    };
    body.once('error', fail);
    res.once('error', fail);
    whenDone(res, (finished) => {
      if (finished) resolve();
      else fail(new Error('the connection closed before the response was sent'));
    });
    body.pipe(res);
  });
}
