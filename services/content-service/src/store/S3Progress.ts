import { Transform, type Readable, type TransformCallback } from 'node:stream';

/** S3 did not answer in time, or stopped taking a body it was sent. */
export class StorageTimeout extends Error {
  override readonly name = 'StorageTimeout';
}

/**
 * A body on its way into S3, watched: `onStall` gets a StorageTimeout once bytes are waiting (or
 * the body is all sent) and S3 takes none for `stallMs`. A client that is slow to send leaves
 * nothing waiting, which is not S3's fault and never trips it. `stop` ends the watch.
 */
export function watchedUpload(body: Readable, stallMs: number, onStall: (error: StorageTimeout) => void): { watched: Readable; stop: () => void } {
  const watched = new ProgressStream();
  body.pipe(watched);
  let lastTaken = watched.bytesTaken;
  let lastProgressAt = Date.now();
  const watchdog = setInterval(
    () => {
      const taken = watched.bytesTaken;
      const waitingForS3 = watched.readableEnded || watched.readableLength > 0;
      if (taken !== lastTaken || !waitingForS3) {
        lastTaken = taken;
        lastProgressAt = Date.now();
      } else if (Date.now() - lastProgressAt >= stallMs) {
        onStall(new StorageTimeout(`S3 made no progress for ${stallMs} ms`));
      }
    },
    Math.min(250, stallMs),
  );
  const stop = () => {
    clearInterval(watchdog);
    if (!watched.readableEnded) {
      body.unpipe(watched);
      watched.destroy();
    }
  };
  return { watched, stop };
}

/**
 * An object's body that fails with StorageTimeout once S3 sends nothing for `stallMs` while
 * the reader would take more. A reader that is slow (a slow client) fills the buffer here and
 * pauses S3, which is not S3's fault and never trips it; once S3 has sent the whole body, nothing
 * is left to blame it for. An error nobody listens to (a reader that stopped without destroying
 * the body) ends the body quietly instead of taking the process down.
 */
export function watchedDownload(source: Readable, stallMs: number): Readable {
  const watched = new ProgressStream();
  // Readers add their own 'error' listeners; this one only keeps an error that no reader is there
  // to take (a body read no further, not destroyed) from being thrown out of the process.
  watched.on('error', () => undefined);
  const fail = (error: Error) => watched.destroy(error);
  source.on('error', fail);
  source.pipe(watched);
  let last = -1;
  let lastProgressAt = Date.now();
  const watchdog = setInterval(
    () => {
      const received = watched.bytesReceived;
      const readerWaiting = watched.readableLength < watched.readableHighWaterMark;
      if (received !== last || !readerWaiting) {
        last = received;
        lastProgressAt = Date.now();
      } else if (Date.now() - lastProgressAt >= stallMs) {
        clearInterval(watchdog);
        fail(new StorageTimeout(`S3 sent nothing for ${stallMs} ms`));
      }
    },
    Math.min(250, stallMs),
  );
  source.once('end', () => clearInterval(watchdog));
  watched.once('close', () => {
    clearInterval(watchdog);
    if (!source.destroyed && !source.readableEnded) source.destroy();
  });
  return watched;
}

/** Passes a body through, counting what came in and what the reader took. */
class ProgressStream extends Transform {
  private received = 0;

  get bytesReceived(): number {
    return this.received;
  }

  /** Bytes handed on to the reader (S3's socket), as opposed to still buffered here. */
  get bytesTaken(): number {
    return this.received - this.readableLength;
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, callback: TransformCallback): void {
    this.received += chunk.length;
    callback(null, chunk);
  }
}
