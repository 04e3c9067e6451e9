import { formatContentRange, formatDigest, HEADERS } from '#protocol';
import { names, type UploadCreated } from './api';
import type { ApiCalls } from './ApiCalls';
import type { DirectTransfer } from './DirectTransfer';
import { checkRepr, combineCrc64, digestsOf, EMPTY_CRC64, type BodyDigests } from './digests';
import { ContentStateError, IntegrityError } from './errors';
import type { PartSource, SourcePart } from './PartSources';
import type { ContentStatus, UploadOptions } from './options';

/**
 * The one upload algorithm, whatever the parts come from: a new content is created by its first
 * part (a POST) and the rest follow as PUTs, `concurrency` at a time; a resumed one asks the
 * service what it holds and sends only the rest. Until the last part is read, parts name the
 * total when it was known beforehand, else `*`; the last part names it. Every request carries the
 * SHA-256 of its body (Content-Digest), so the service keeps no byte that changed on the way.
 * Returns the content id.
 */
export async function uploadParts(
  api: ApiCalls,
  source: PartSource,
  opts: UploadOptions,
  status: (id: string) => Promise<ContentStatus>,
  direct: DirectTransfer | null = null,
): Promise<string> {
  const contentHeaders: Record<string, string> = {
    [names.contentType]: opts.contentType ?? 'application/octet-stream',
  };
  const known = source.size;
  const { parts } = source;
  let total: number | null = known;
  let done = 0;
  const advance = (bytes: number) => {
    done += bytes;
    opts.onProgress?.({ done, total });
  };
  const rangeOf = (p: SourcePart) =>
    formatContentRange({ start: p.start, end: p.start + p.length - 1 }, p.last ? p.start + p.length : known);
  const checkLength = (p: SourcePart) => {
    if (known !== null && p.start + p.length > known)
      throw new IntegrityError(`the stream is longer than the ${known} bytes announced`);
    if (!p.last) return;
    total = p.start + p.length;
    if (known !== null && known !== total)
      throw new IntegrityError(`the stream had ${total} bytes, not the ${known} announced`);
  };
  // Each part's digests by its first byte: with all of them, the whole content's are known.
  const sent = new Map<number, BodyDigests & { length: number }>();
  const digestsFor = async (p: SourcePart) => {
    const digests = await digestsOf(p.body());
    sent.set(p.start, { ...digests, length: p.length });
    return digests;
  };
  const send = async (method: 'POST' | 'PUT', path: string, p: SourcePart, headers: Record<string, string>) => {
    // Read once before it is sent (and again for each attempt): the digest must go in the head.
    const digests = await digestsFor(p);
    const digest = formatDigest({ 'sha-256': digests.sha256, crc64nvme: digests.crc64nvme });
    return api.call({
      method,
      url: api.url(path),
      headers: { ...headers, [names.contentRange]: rangeOf(p), [HEADERS.contentDigest]: digest },
      body: p.body,
      contentLength: p.length,
      signal: opts.signal,
    });
  };

  let id = opts.resume;
  let received: { start: number; end: number }[] = [];
  if (id) {
    const now = await status(id);
    if (known !== null && now.total !== null && now.total !== known) {
      throw new ContentStateError(
        'totalConflict',
        `content ${id} is ${now.total} bytes long, the ${source.kind} ${known}`,
      );
    }
    if (now.state === 'ready') {
      total = now.total;
      advance(now.total ?? 0);
      return id;
    }
    received = now.received;
    const left = source.leaveOut(received);
    if (left !== null) advance(left);
  } else {
    const first = await parts.next();
    if (first.done) {
      if (known !== null && known !== 0) throw new IntegrityError(`the stream had 0 bytes, not the ${known} announced`);
      // Nothing to send: a one-shot upload of an empty content.
      const res = await api.call({
        method: 'POST',
        url: api.url(`/v1/${opts.owner}/contents`),
        headers: {
          ...contentHeaders,
          [HEADERS.contentDigest]: formatDigest({ 'sha-256': (await digestsOf([])).sha256, crc64nvme: EMPTY_CRC64 }),
        },
        body: () => Buffer.alloc(0),
        contentLength: 0,
        signal: opts.signal,
      });
      total = 0;
      advance(0);
      return (JSON.parse(res.text) as UploadCreated).id;
    }
    const p = first.value;
    checkLength(p);
    const res = await send('POST', `/v1/${opts.owner}/contents`, p, contentHeaders);
    await p.release();
    id = (JSON.parse(res.text) as UploadCreated).id;
    advance(p.length);
    if (p.last) {
      checkRepr(await status(id), wholeDigests(sent, p.length), 'the file sent');
      return id;
    }
  }
  opts.onContentId?.(id);
  const contentId = id;
  let failed: unknown = null;
  await Promise.all(
    Array.from({ length: opts.concurrency ?? 4 }, async () => {
      while (failed === null) {
        const next = await parts.next();
        if (next.done) return;
        const p = next.value;
        try {
          checkLength(p);
          const end = p.start + p.length - 1;
          if (!received.some((r) => r.start <= p.start && r.end >= end)) {
            // Straight to S3 where the service offers it for this part, else through the service.
            const viaS3 =
              direct !== null &&
              (await direct.sendPart(opts.owner, contentId, p, (await digestsFor(p)).sha256, opts.signal));
            if (!viaS3) await send('PUT', `/v1/${opts.owner}/contents/${contentId}`, p, {});
          }
          await p.release();
          advance(p.length);
        } catch (error) {
          failed ??= error;
        }
      }
    }),
  );
  if (failed !== null) {
    await parts.return?.(undefined);
    throw failed;
  }
  const after = await status(contentId);
  if (after.state !== 'ready')
    throw new ContentStateError('contentNotReady', `all parts were sent but content ${contentId} is not complete`);
  checkRepr(after, wholeDigests(sent, total ?? 0), 'the file sent');
  return contentId;
}

/**
 * The whole content's digests from its parts': the CRC-64/NVME combined in byte order, the SHA-256
 * only of a content sent in one part. None when some bytes were not read here (a resumed upload
 * skips the parts the service holds).
 */
function wholeDigests(parts: Map<number, BodyDigests & { length: number }>, total: number): Partial<BodyDigests> {
  let crc: Buffer = EMPTY_CRC64;
  let at = 0;
  for (const [start, part] of [...parts].sort(([a], [b]) => a - b)) {
    if (start !== at) return {};
    crc = combineCrc64(crc, part.crc64nvme, part.length);
    at += part.length;
  }
  if (at !== total) return {};
  const only = parts.size === 1 ? parts.get(0) : undefined;
  return { crc64nvme: crc, ...(only ? { sha256: only.sha256 } : {}) };
}
