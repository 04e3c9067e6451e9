import type { Readable } from 'node:stream';

/** S3 did not answer in time, or stopped taking a body it was sent. */
export class StorageTimeout extends Error {
  override readonly name = 'StorageTimeout';
  readonly code = 'CP_ERR_STORAGE_TIMEOUT';
}

/**
 * Counts the bytes a stream's producer pushes into it, from inside (its own `push`), so that
 * watching a body's progress puts no stream between it and its reader: one Transform fewer on
 * every byte of every upload and download. `ended` turns true once the producer pushed the end.
 */
function countPushes(stream: Readable): { pushed: () => number; ended: () => boolean } {
  let pushed = 0;
  let ended = false;
  const push = stream.push.bind(stream);
  stream.push = (chunk: unknown, encoding?: BufferEncoding) => {
    if (chunk === null) ended = true;
    else if (chunk !== undefined) pushed += (chunk as { length: number }).length;
    return push(chunk, encoding);
  };
  return { pushed: () => pushed, ended: () => ended };
}

/**
 * A body on its way into S3, watched: `onStall` gets a StorageTimeout once bytes are waiting (or
 * the body is all sent) and S3 takes none for `stallMs`. A client that is slow to send leaves
 * nothing waiting, which is not S3's fault and never trips it. `stop` ends the watch and, when
 * the body was not all sent, stops it flowing into the (failed) S3 request. `body` must not have
 * been read from yet.
 */
export function watchedUpload(
  body: Readable,
  stallMs: number,
  onStall: (error: StorageTimeout) => void,
): { stop: () => void } {
  const counted = countPushes(body);
  // Bytes handed on to the reader (S3's socket), as opposed to still buffered in the body.
  const taken = () => counted.pushed() - body.readableLength;
  let lastTaken = taken();
  let lastProgressAt = Date.now();
  const watchdog = setInterval(
    () => {
      const now = taken();
      const waitingForS3 = body.readableEnded || body.readableLength > 0;
      if (now !== lastTaken || !waitingForS3) {
        lastTaken = now;
        lastProgressAt = Date.now();
      } else if (Date.now() - lastProgressAt >= stallMs) {
        onStall(new StorageTimeout(`S3 made no progress for ${stallMs} ms`));
      }
    },
    Math.min(250, stallMs),
  );
  const stop = () => {
    clearInterval(watchdog);
    if (!body.readableEnded) body.unpipe();
  };
  return { stop };
}

/**
 * An object's body, watched: it fails with StorageTimeout once S3 sends nothing for `stallMs`
 * while the reader would take more. A reader that is slow (a slow client) fills the body's buffer
 * and pauses S3, which is not S3's fault and never trips it; once S3 has sent the whole body,
 * nothing is left to blame it for. An error nobody listens to (a reader that stopped without
 * destroying the body) ends the body quietly instead of taking the process down. Returns `source`
 * itself: the watch counts from inside it.
 */
export function watchedDownload(source: Readable, stallMs: number): Readable {
  // Readers add their own 'error' listeners; this one only keeps an error that no reader is there
  // to take (a body read no further, not destroyed) from being thrown out of the process.
  source.on('error', () => undefined);
  const counted = countPushes(source);
  let last = -1;
  let lastProgressAt = Date.now();
  const watchdog = setInterval(
    () => {
      if (counted.ended()) {
        clearInterval(watchdog);
        return;
      }
      const received = counted.pushed();
      const readerWaiting = source.readableLength < source.readableHighWaterMark;
      if (received !== last || !readerWaiting) {
        last = received;
        lastProgressAt = Date.now();
      } else if (Date.now() - lastProgressAt >= stallMs) {
        clearInterval(watchdog);
        source.destroy(new StorageTimeout(`S3 sent nothing for ${stallMs} ms`));
      }
    },
    Math.min(250, stallMs),
  );
  source.once('close', () => clearInterval(watchdog));
  return source;
}

/** Sends one call with the store's deadline on its answer (ObjectStore's `bounded`: see withDeadline). */
export type Bounded = <O>(send: (abortSignal: AbortSignal) => Promise<O>) => Promise<O>;

/**
 * Sends a call with a deadline on its answer. The deadline ends once the answer's headers came,
 * so a GetObject body streams as long as it flows (the socket's idle timeout watches it then).
 */
export async function withDeadline<O>(
  callMs: number,
  send: (abortSignal: AbortSignal) => Promise<O>,
  outer?: AbortSignal,
): Promise<O> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), callMs);
  const onOuterAbort = () => controller.abort();
  outer?.addEventListener('abort', onOuterAbort, { once: true });
  try {
    return await send(controller.signal);
  } catch (error) {
    if (controller.signal.aborted && !outer?.aborted)
      throw new StorageTimeout(`S3 did not answer within ${callMs} ms`, { cause: error });
    throw error;
  } finally {
    clearTimeout(timer);
    outer?.removeEventListener('abort', onOuterAbort);
  }
}

/**
 * Sends a request whose body is a stream. The SDK pipes the body without watching it for
 * errors; a body that fails (short, too long, client gone) aborts the S3 request, and that
 * error, not the abort, is what the caller sees. So does `signal` (a claim the caller lost):
 * its reason is what the caller sees. No fixed deadline (a 64 MiB part from a slow client may
 * take minutes); instead the call fails when S3 stops making progress for `stallMs`: bytes are
 * waiting and S3 takes none, or the body is sent and no answer comes. A client that is slow to
 * send is not S3's fault and never trips it.
 */
export async function streamInto<O>(
  body: Readable,
  stallMs: number,
  send: (watched: Readable, abortSignal: AbortSignal) => Promise<O>,
  signal?: AbortSignal,
): Promise<O> {
  const controller = new AbortController();
  let failure: unknown;
  const onError = (error: unknown) => {
    failure ??= error;
    controller.abort();
  };
  body.on('error', onError);
  const onAbort = () => onError(signal!.reason);
  if (signal?.aborted) onAbort();
  signal?.addEventListener('abort', onAbort);
  const { stop } = watchedUpload(body, stallMs, onError);
  try {
    return await send(body, controller.signal);
  } catch (error) {
    throw failure ?? error;
  } finally {
    signal?.removeEventListener('abort', onAbort);
    stop();
  }
}
