import { createWriteStream, type WriteStream } from 'node:fs';
import { open, rename, stat } from 'node:fs/promises';
import { formatContentRange, formatRange, PART_SIZE } from '#protocol';
import { names } from './api';
import { header, type ApiCalls } from './ApiCalls';
import { checkRepr, type BodyDigests } from './digests';
import { DirectTransfer } from './DirectTransfer';
import { DownloadJournal } from './DownloadJournal';
import { IntegrityError, TransportError } from './errors';
import { FileDigests } from './fileDigests';
import type { ContentStatus, DownloadOptions } from './options';
import { inFlight } from './inFlight';
import { splitIntoParts } from './ranges';

/**
 * ContentClient.downloadFile's work once the content is known ready: the ranges fetched into
 * `<path>.partial`, hashed as the file fills (up to the first range not yet written), checked,
 * then renamed to `path`.
 */
export async function downloadToFile(
  api: ApiCalls,
  status: ContentStatus & { total: number },
  id: string,
  path: string,
  opts: DownloadOptions,
): Promise<{ bytes: number; sha256: string }> {
  const { total } = status;
  const partial = `${path}.partial`;
  // A journal whose .partial is gone (removed by hand) has nothing to resume: the download starts over.
  const resumable =
    (opts.resume ?? false) &&
    (await stat(partial).then(
      () => true,
      () => false,
    ));
  const journal = await DownloadJournal.open(`${partial}.json`, status.etag, total, resumable);
  const file = await open(partial, journal.done.length ? 'r+' : 'w');
  await file.truncate(total);
  await file.close();
  const chunks = splitIntoParts(total, opts.chunkSize ?? PART_SIZE);
  const written = chunks.map((_, i) => journal.has(i));
  const todo = chunks.map((c, i) => ({ ...c, i })).filter((c) => !written[c.i]);
  let done = chunks.filter((_, i) => written[i]).reduce((n, c) => n + c.end - c.start + 1, 0);
  opts.onProgress?.({ done, total });
  const hashing = new FileDigests(partial, total);
  let hashable = 0;
  const hashUpTo = () => {
    while (hashable < chunks.length && written[hashable]) hashable++;
    hashing.written(hashable < chunks.length ? chunks[hashable]!.start : total);
  };
  hashUpTo();
  const fetch = rangeFetcher(api, id, partial, total, opts, (bytes) => {
    done += bytes;
    opts.onProgress?.({ done, total });
  });
  let digests: BodyDigests;
  try {
    await inFlight(opts.concurrency ?? 4, todo, async (c) => {
      await fetch(c);
      journal.add(c.i);
      written[c.i] = true;
      hashUpTo();
    });
    await journal.flush();
    const size = (await stat(partial)).size;
    if (size !== total) throw new IntegrityError(`downloaded ${size} bytes, the content has ${total}`);
    digests = await hashing.digests();
  } finally {
    // Whatever failed, no worker is left waiting for bytes (it would keep the process alive).
    await hashing.close();
  }
  const sha256 = digests.sha256.toString('hex');
  if (opts.sha256 && opts.sha256.toLowerCase() !== sha256)
    throw new IntegrityError(`SHA-256 of the download is ${sha256}, expected ${opts.sha256}`);
  checkRepr(status, digests, 'the download');
  await rename(partial, path);
  await journal.remove();
  return { bytes: total, sha256 };
}

/**
 * Fetches one range into the file at its offset: through the service, or (with `direct`) from S3
 * where the service answers a redirect. A body that broke off goes on from the last byte written,
 * not from the range's start. `progress` hears of the bytes as they are written.
 */
function rangeFetcher(
  api: ApiCalls,
  id: string,
  partial: string,
  total: number,
  opts: DownloadOptions,
  progress: (bytes: number) => void,
): (c: { start: number; end: number }) => Promise<void> {
  const direct = opts.direct ? new DirectTransfer(api) : null;
  return async (c) => {
    let from = c.start;
    let sink: WriteStream | null = null;
    const written = () => {
      if (sink !== null) {
        from += sink.bytesWritten;
        progress(sink.bytesWritten);
        sink = null;
      }
    };
    const sinkAt = () => (sink = createWriteStream(partial, { flags: 'r+', start: from }));
    const get = (prefer: boolean) =>
      api.call({
        method: 'GET',
        url: api.url(`/v1/${opts.owner}/contents/${id}`),
        headers: prefer ? { [names.prefer]: 'redirect' } : {},
        headersFor: () => {
          written();
          return { [names.range]: formatRange(from, c.end) };
        },
        signal: opts.signal,
        sink: sinkAt,
      });
    let res = await get(direct !== null);
    // Redirected: fetched from S3 with the same Range; through the service when that fails.
    if (res.status === 307)
      res = (await direct!.follow(res, formatRange(from, c.end), sinkAt, opts.signal)) ?? (await get(false));
    const cr = header(res, names.answerContentRange);
    if (res.status !== 206 || cr !== formatContentRange({ start: from, end: c.end }, total))
      throw new TransportError(`unexpected answer to a range request: ${res.status} ${cr}`);
    progress(c.end - from + 1);
  };
}
