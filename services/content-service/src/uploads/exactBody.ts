import type { Readable } from 'node:stream';
import { ExactLengthStream } from './ExactLengthStream';

/** The client went away before its body was complete. */
export class ClientDisconnected extends Error {
  override readonly name = 'ClientDisconnected';
  constructor() {
    super('the client closed the connection before the body was complete');
  }
}

/**
 * Wraps a request body so that whatever reads it gets exactly `expected` bytes or an error:
 * a short body, a long body and a dropped connection all fail the stream. With `atMost`, only a
 * body longer than `expected` fails.
 */
export function exactBody(source: Readable, expected: number, atMost = false): ExactLengthStream {
  const counted = new ExactLengthStream(expected, atMost);
  source.on('error', (error) => counted.destroy(error));
  source.on('close', () => {
    if (!source.readableEnded) counted.destroy(new ClientDisconnected());
  });
  source.pipe(counted);
  return counted;
}

/** `source.pipe(target)` that also fails `target` when `source` fails. */
export function pipeInto<T extends NodeJS.WritableStream & { destroy(error?: Error): unknown }>(source: Readable, target: T): T {
  source.on('error', (error) => target.destroy(error));
  return source.pipe(target);
}
