import type { Readable } from 'node:stream';
import { ExactLengthStream, type ExactLengthOptions } from './ExactLengthStream';

/** The client went away before its body was complete. */
export class ClientDisconnected extends Error {
  override readonly name = 'ClientDisconnected';
  readonly code = 'CP_ERR_CLIENT_DISCONNECTED';
  constructor() {
    super('the client closed the connection before the body was complete');
  }
}

/**
 * Wraps a request body so that whatever reads it gets exactly `expected` bytes or an error:
 * a short body, a long body and a dropped connection all fail the stream. With `atMost`, only a
 * body longer than `expected` fails; with `hash`, the stream keeps the bytes' SHA-256.
 */
export function exactBody(source: Readable, expected: number, options: ExactLengthOptions = {}): ExactLengthStream {
  const counted = new ExactLengthStream(expected, options);
  source.on('error', (error) => counted.destroy(error));
  source.on('close', () => {
    if (!source.readableEnded) counted.destroy(new ClientDisconnected());
  });
  source.pipe(counted);
  return counted;
}
