import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, open, rename, stat, readFile, writeFile, rm, type FileHandle } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { certificateDer, checkKeyPair, decryptEncryptedKey } from './EncryptedKey';
import { ApiError, IntegrityError, TransportError } from './errors';
import { missingParts, parseReceivedRanges, splitIntoParts, type ByteRange } from './ranges';
import { Transport, type Received, type Sent } from './transport';

export const PART_SIZE = 64 * 1024 * 1024;

/** How requests prove who sends them. */
export type Credentials =
  | { kind: 'bearer'; token: string }
  | { kind: 'session'; sid: string; refreshToken?: string; apiKey?: string };

export interface ContentClientOptions {
  /** The gateway, e.g. https://content.example.com */
  baseUrl: string;
  credentials: Credentials;
  /** Attempts per request on network errors and 5xx (with exponential backoff and jitter). */
  attempts?: number;
  /** Called after a refresh replaced the session, so callers can save the new pair. */
  onCredentials?: (credentials: Credentials) => void;
  /**
   * Upload part size, at most (and by default) 64 MiB. Parts on the 64 MiB grid stream straight
   * into S3; other sizes are staged by the service (slower). Smaller sizes are for tests.
   */
  partSize?: number;
}

export interface Progress {
  /** Bytes done, of `total` (null while a stream's length is not known). */
  done: number;
  total: number | null;
}

export interface UploadOptions {
  owner: string;
  /** Continue this content: only the parts the service lacks are sent. */
  resume?: string;
  concurrency?: number;
  contentType?: string;
  signal?: AbortSignal;
  onProgress?: (p: Progress) => void;
  /** Called once the content id is known (before the rest of the parts), e.g. to print it for --resume. */
  onContentId?: (id: string) => void;
}

export interface StreamUploadOptions extends UploadOptions {
  /** The stream's length when known beforehand; otherwise parts go as `bytes a-b/*` until the end. */
  size?: number;
  /** Where parts wait on disk until they are sent (default: the system's temporary directory). */
  spoolDir?: string;
}

export interface DownloadOptions {
  owner: string;
  concurrency?: number;
  /** Range size per request. */
  chunkSize?: number;
  /** Keep what an interrupted download already wrote (a `<file>.partial` and its progress file). */
  resume?: boolean;
  /** When set, the downloaded file's SHA-256 must be this (hex). */
  sha256?: string;
  signal?: AbortSignal;
  onProgress?: (p: Progress) => void;
}

export interface ContentStatus {
  state: 'uploading' | 'ready';
  total: number | null;
  received: ByteRange[];
  etag: string | null;
  contentType: string | null;
}

export interface SessionPair {
  sid: string;
  refreshToken: string;
}

/**
 * The content API for programs: uploads of files in 64 MiB parts (N in flight, each streamed from
 * disk, retried, resumable), downloads by ranges into a file, status, certificate sign-in and
 * session refresh. A 401 with a refresh token at hand refreshes the session once and retries.
 */
export class ContentClient {
  readonly transport = new Transport();
  private credentials: Credentials;
  private readonly base: URL;
  private readonly attempts: number;
  private readonly partSize: number;
  /** The refresh under way: concurrent 401s share it (a second rotation with the same token would revoke the session). */
  private refreshing: Promise<SessionPair> | null = null;

  constructor(private readonly options: ContentClientOptions) {
    this.base = new URL(options.baseUrl);
    this.credentials = options.credentials;
    this.attempts = options.attempts ?? 6;
    this.partSize = options.partSize ?? PART_SIZE;
    if (!Number.isInteger(this.partSize) || this.partSize < 1 || this.partSize > PART_SIZE) throw new RangeError(`partSize must be 1..${PART_SIZE}`);
  }

  get currentCredentials(): Credentials {
    return this.credentials;
  }

  close(): void {
    this.transport.close();
  }

  // --- contents -------------------------------------------------------------------------------

  async status(owner: string, id: string, signal?: AbortSignal): Promise<ContentStatus> {
    const res = await this.call({ method: 'HEAD', url: this.url(`/v1/${owner}/contents/${id}`), headers: {}, signal });
    const total = res.headers['x-content-total'];
    return {
      state: res.headers['x-upload-state'] === 'ready' ? 'ready' : 'uploading',
      total: typeof total === 'string' && total !== '' ? Number(total) : null,
      received: parseReceivedRanges(header(res, 'x-received-ranges')),
      etag: header(res, 'etag') ?? null,
      contentType: header(res, 'content-type') ?? null,
    };
  }

  /** Uploads a file; returns the content id. */
  async uploadFile(path: string, opts: UploadOptions): Promise<string> {
    const total = (await stat(path)).size;
    const parts = splitIntoParts(total, this.partSize);
    const contentHeaders: Record<string, string> = { 'content-type': opts.contentType ?? 'application/octet-stream' };
    const rangeOf = (p: ByteRange) => `bytes ${p.start}-${p.end}/${total}`;
    const body = (p: ByteRange) => () => createReadStream(path, { start: p.start, end: p.end, highWaterMark: 1024 * 1024 });
    let done = 0;
    const advance = (bytes: number) => {
      done += bytes;
      opts.onProgress?.({ done, total });
    };

    let id = opts.resume;
    let todo = parts;
    if (id) {
      const status = await this.status(opts.owner, id, opts.signal);
      if (status.total !== null && status.total !== total) {
        throw new ApiError(409, 'totalConflict', `content ${id} is ${status.total} bytes long, the file ${total}`, null, null);
      }
      if (status.state === 'ready') {
        advance(total);
        return id;
      }
      todo = missingParts(parts, status.received);
      advance(total - todo.reduce((n, p) => n + p.end - p.start + 1, 0));
    } else {
      if (total === 0 || parts.length === 1) {
        const res = await this.call({
          method: 'POST',
          url: this.url(`/v1/${opts.owner}/contents`),
          headers: total === 0 ? contentHeaders : { ...contentHeaders, 'content-range': rangeOf(parts[0]!) },
          body: total === 0 ? () => Buffer.alloc(0) : body(parts[0]!),
          contentLength: total,
          signal: opts.signal,
        });
        advance(total);
        return (JSON.parse(res.text) as { id: string }).id;
      }
      // The first part creates the content; the rest follow, N at a time.
      const first = parts[0]!;
      const res = await this.call({
        method: 'POST',
        url: this.url(`/v1/${opts.owner}/contents`),
        headers: { ...contentHeaders, 'content-range': rangeOf(first) },
        body: body(first),
        contentLength: first.end - first.start + 1,
        signal: opts.signal,
      });
      id = (JSON.parse(res.text) as { id: string }).id;
      advance(first.end - first.start + 1);
      todo = parts.slice(1);
    }
    opts.onContentId?.(id);
    const contentId = id;
    await inFlight(opts.concurrency ?? 4, todo, async (p) => {
      await this.call({
        method: 'PUT',
        url: this.url(`/v1/${opts.owner}/contents/${contentId}`),
        headers: { 'content-range': rangeOf(p) },
        body: body(p),
        contentLength: p.end - p.start + 1,
        signal: opts.signal,
      });
      advance(p.end - p.start + 1);
    });
    const after = await this.status(opts.owner, contentId, opts.signal);
    if (after.state !== 'ready') throw new ApiError(409, 'contentNotReady', `all parts were sent but content ${contentId} is not complete`, null, null);
    return contentId;
  }

  /**
   * Uploads a stream (stdin, a pipe, a generated body) whose length may be unknown; returns the
   * content id. Parts are read as a slot frees up and spooled to a temporary directory (`spoolDir`,
   * default the system's), each deleted once sent: memory stays at a few MiB whatever the part
   * size, the disk holds up to (concurrency + 1) parts. Until the end is seen parts go as
   * `bytes a-b/*`; the last one names the total. With `resume`, the stream must replay the same
   * bytes from the start: parts the service already holds are read and skipped.
   */
  async uploadStream(source: AsyncIterable<Uint8Array>, opts: StreamUploadOptions): Promise<string> {
    const spool = await mkdtemp(join(opts.spoolDir ?? tmpdir(), 'content-upload-'));
    try {
      return await this.uploadSpooled(source, spool, opts);
    } finally {
      await rm(spool, { recursive: true, force: true });
    }
  }

  private async uploadSpooled(source: AsyncIterable<Uint8Array>, spool: string, opts: StreamUploadOptions): Promise<string> {
    const contentHeaders: Record<string, string> = { 'content-type': opts.contentType ?? 'application/octet-stream' };
    const known = opts.size ?? null;
    const parts = spooledParts(source, this.partSize, spool);
    const bodyOf = (p: SpooledPart) => () => createReadStream(p.path, { highWaterMark: 1024 * 1024 });
    let done = 0;
    let total: number | null = known;
    const advance = (bytes: number) => {
      done += bytes;
      opts.onProgress?.({ done, total });
    };
    const rangeOf = (p: SpooledPart) => `bytes ${p.start}-${p.start + p.length - 1}/${p.last ? p.start + p.length : (known ?? '*')}`;
    const checkLength = (p: SpooledPart) => {
      if (!p.last) return;
      total = p.start + p.length;
      if (known !== null && known !== total) throw new IntegrityError(`the stream had ${total} bytes, not the ${known} announced`);
    };

    let id = opts.resume;
    let received: ByteRange[] = [];
    if (id) {
      const status = await this.status(opts.owner, id, opts.signal);
      if (status.state === 'ready') {
        total = status.total;
        advance(status.total ?? 0);
        return id;
      }
      if (known !== null && status.total !== null && status.total !== known) {
        throw new ApiError(409, 'totalConflict', `content ${id} is ${status.total} bytes long, the stream ${known}`, null, null);
      }
      received = status.received;
    } else {
      const first = await parts.next();
      if (first.done) {
        // An empty stream: a one-shot upload of nothing.
        const res = await this.call({ method: 'POST', url: this.url(`/v1/${opts.owner}/contents`), headers: contentHeaders, body: () => Buffer.alloc(0), contentLength: 0, signal: opts.signal });
        total = 0;
        advance(0);
        return (JSON.parse(res.text) as { id: string }).id;
      }
      const p = first.value;
      checkLength(p);
      const res = await this.call({
        method: 'POST',
        url: this.url(`/v1/${opts.owner}/contents`),
        headers: { ...contentHeaders, 'content-range': rangeOf(p) },
        body: bodyOf(p),
        contentLength: p.length,
        signal: opts.signal,
      });
      await rm(p.path, { force: true });
      id = (JSON.parse(res.text) as { id: string }).id;
      advance(p.length);
      if (p.last) return id;
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
              await this.call({
                method: 'PUT',
                url: this.url(`/v1/${opts.owner}/contents/${contentId}`),
                headers: { 'content-range': rangeOf(p) },
                body: bodyOf(p),
                contentLength: p.length,
                signal: opts.signal,
              });
            }
            await rm(p.path, { force: true });
            advance(p.length);
          } catch (error) {
            failed ??= error;
          }
        }
      }),
    );
    if (failed !== null) {
      await parts.return(undefined);
      throw failed;
    }
    const after = await this.status(opts.owner, contentId, opts.signal);
    if (after.state !== 'ready') throw new ApiError(409, 'contentNotReady', `all parts were sent but content ${contentId} is not complete`, null, null);
    return contentId;
  }

  /**
   * Downloads a ready content into `path` by ranges, N in flight, each written at its offset.
   * Until it is complete the data lives in `<path>.partial` beside `<path>.partial.json` (the
   * ranges done), so an interrupted download can resume; the length (and SHA-256 if asked) is
   * checked before the file takes its name.
   */
  async downloadFile(id: string, path: string, opts: DownloadOptions): Promise<{ bytes: number; sha256: string }> {
    const status = await this.status(opts.owner, id, opts.signal);
    if (status.state !== 'ready' || status.total === null) {
      throw new ApiError(409, 'contentNotReady', `content ${id} is still being uploaded`, null, null);
    }
    const total = status.total;
    const partial = `${path}.partial`;
    const journal = `${partial}.json`;
    let doneRanges: number[] = [];
    if (opts.resume) {
      try {
        const saved = JSON.parse(await readFile(journal, 'utf8')) as { etag: string | null; total: number; done: number[] };
        if (saved.total === total && saved.etag === status.etag) doneRanges = saved.done;
      } catch {
        /* nothing to resume */
      }
    }
    const file = await open(partial, doneRanges.length ? 'r+' : 'w');
    await file.truncate(total);
    await file.close();
    const chunks = splitIntoParts(total, opts.chunkSize ?? PART_SIZE);
    const todo = chunks.map((c, i) => ({ ...c, i })).filter((c) => !doneRanges.includes(c.i));
    let done = chunks.filter((_, i) => doneRanges.includes(i)).reduce((n, c) => n + c.end - c.start + 1, 0);
    opts.onProgress?.({ done, total });
    let saving = Promise.resolve();
    await inFlight(opts.concurrency ?? 4, todo, async (c) => {
      const res = await this.call({
        method: 'GET',
        url: this.url(`/v1/${opts.owner}/contents/${id}`),
        headers: { range: `bytes=${c.start}-${c.end}` },
        signal: opts.signal,
        sink: () => createWriteStream(partial, { flags: 'r+', start: c.start }),
      });
      const cr = header(res, 'content-range');
      if (res.status !== 206 || cr !== `bytes ${c.start}-${c.end}/${total}`) throw new TransportError(`unexpected answer to a range request: ${res.status} ${cr}`);
      done += c.end - c.start + 1;
      doneRanges.push(c.i);
      opts.onProgress?.({ done, total });
      const snapshot = JSON.stringify({ etag: status.etag, total, done: doneRanges });
      saving = saving.then(() => writeFile(journal, snapshot));
    });
    await saving;
    const size = (await stat(partial)).size;
    if (size !== total) throw new IntegrityError(`downloaded ${size} bytes, the content has ${total}`);
    const sha256 = await fileSha256(partial);
    if (opts.sha256 && opts.sha256.toLowerCase() !== sha256) throw new IntegrityError(`SHA-256 of the download is ${sha256}, expected ${opts.sha256}`);
    await rename(partial, path);
    await rm(journal, { force: true });
    return { bytes: total, sha256 };
  }

  // --- sign-in and sessions ---------------------------------------------------------------------

  /** Certificate sign-in: authenticate-by-cert, open the challenge with the key, approve-cert. */
  async signIn(opts: { certificatePem: string; privateKeyPem: string; apiKey: string; signal?: AbortSignal }): Promise<SessionPair> {
    checkKeyPair(opts.certificatePem, opts.privateKeyPem);
    const challenge = await this.transport.send({
      method: 'POST',
      url: this.url(`/auth/v5.13/authenticate-by-cert?apiKey=${encodeURIComponent(opts.apiKey)}`),
      headers: { 'content-type': 'application/x-pem-file' },
      body: () => Buffer.from(opts.certificatePem),
      contentLength: Buffer.byteLength(opts.certificatePem),
      signal: opts.signal,
    });
    const { EncryptedKey, Link } = JSON.parse(challenge.text) as { EncryptedKey: string; Link: { Href: string } };
    const rnd = await decryptEncryptedKey(EncryptedKey, opts.certificatePem, opts.privateKeyPem);
    const thumbprint = new URL(Link.Href).searchParams.get('thumbprint') ?? createHash('sha1').update(certificateDer(opts.certificatePem)).digest('hex').toUpperCase();
    const approved = await this.transport.send({
      method: 'POST',
      url: this.url(`/auth/v5.13/approve-cert?thumbprint=${thumbprint}&apiKey=${encodeURIComponent(opts.apiKey)}`),
      headers: { 'content-type': 'application/octet-stream' },
      body: () => rnd,
      contentLength: rnd.length,
      signal: opts.signal,
    });
    const pair = JSON.parse(approved.text) as { Sid: string; RefreshToken: string };
    this.credentials = { kind: 'session', sid: pair.Sid, refreshToken: pair.RefreshToken, apiKey: opts.apiKey };
    this.options.onCredentials?.(this.credentials);
    return { sid: pair.Sid, refreshToken: pair.RefreshToken };
  }

  /** Rotates the session; the old pair stops working. Concurrent callers share one rotation. */
  refresh(signal?: AbortSignal): Promise<SessionPair> {
    this.refreshing ??= this.rotate(signal).finally(() => {
      this.refreshing = null;
    });
    return this.refreshing;
  }

  private async rotate(signal?: AbortSignal): Promise<SessionPair> {
    const c = this.credentials;
    if (c.kind !== 'session' || !c.refreshToken || !c.apiKey) throw new Error('refreshing needs a session with a refresh token and an api key');
    const q = new URLSearchParams({ 'auth.sid': c.sid, 'refresh-token': c.refreshToken, 'api-key': c.apiKey });
    const res = await this.transport.send({ method: 'POST', url: this.url(`/sessions/v5.13/sessions/refresh?${q}`), headers: {}, contentLength: 0, signal });
    const pair = JSON.parse(res.text) as { Sid: string; RefreshToken: string };
    this.credentials = { kind: 'session', sid: pair.Sid, refreshToken: pair.RefreshToken, apiKey: c.apiKey };
    this.options.onCredentials?.(this.credentials);
    return { sid: pair.Sid, refreshToken: pair.RefreshToken };
  }

  // --- plumbing ----------------------------------------------------------------------------------

  /** One API call with credentials, retries (network errors, 5xx) and one refresh on 401. */
  private async call(req: Omit<Sent, 'headers'> & { headers: Record<string, string> }): Promise<Received> {
    let refreshed = false;
    for (let attempt = 1; ; attempt++) {
      const sentWith = this.credentials;
      try {
        return await this.transport.send({ ...req, headers: { ...req.headers, authorization: this.authorization() } });
      } catch (error) {
        if (req.signal?.aborted) throw req.signal.reason ?? error;
        if (error instanceof ApiError && error.status === 401 && !refreshed && this.canRefresh()) {
          refreshed = true;
          // Another call may have refreshed while this one was under way: then just send it again.
          if (this.credentials === sentWith || this.refreshing) await this.refresh(req.signal);
          attempt--;
          continue;
        }
        const retriable = error instanceof TransportError || (error instanceof ApiError && error.status >= 500);
        if (!retriable || attempt >= this.attempts) throw error;
        const retryAfter = error instanceof ApiError && error.retryAfterSeconds !== null ? error.retryAfterSeconds * 1000 : 0;
        const backoff = Math.min(30_000, 250 * 2 ** (attempt - 1)) * (0.5 + Math.random());
        await sleep(Math.max(retryAfter, backoff), undefined, { signal: req.signal });
      }
    }
  }

  private canRefresh(): boolean {
    const c = this.credentials;
    return c.kind === 'session' && !!c.refreshToken && !!c.apiKey;
  }

  private authorization(): string {
    const c = this.credentials;
    return c.kind === 'bearer' ? `Bearer ${c.token}` : `auth.sid ${c.sid}`;
  }

  private url(path: string): URL {
    return new URL(path, this.base);
  }
}

function header(res: Received, name: string): string | undefined {
  const v = res.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** Runs `work` over `items`, at most `limit` at a time; the first failure stops new work and is thrown. */
async function inFlight<T>(limit: number, items: T[], work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let failed: unknown = null;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (failed === null && next < items.length) {
        const item = items[next++]!;
        try {
          await work(item);
        } catch (error) {
          failed ??= error;
        }
      }
    }),
  );
  if (failed !== null) throw failed;
}

export interface SpooledPart {
  start: number;
  length: number;
  /** The file holding the part's bytes; the consumer deletes it once the part is sent. */
  path: string;
  /** No byte follows this part. */
  last: boolean;
}

/**
 * Cuts a stream into `size`-byte parts, each written to its own file in `dir` as it arrives, so
 * that memory does not grow with the part size and a part can be sent again on a retry. A full
 * part is held back until the next byte (or the end) shows whether it is the last, so the last
 * part can name the total. An empty stream yields nothing.
 */
export async function* spooledParts(source: AsyncIterable<Uint8Array>, size: number, dir: string): AsyncGenerator<SpooledPart, void, undefined> {
  let count = 0;
  let offset = 0;
  let current: { path: string; file: FileHandle; length: number } | null = null;
  let full: Omit<SpooledPart, 'last'> | null = null;
  try {
    for await (const chunk of source) {
      let rest = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
      while (rest.length > 0) {
        if (full !== null) {
          yield { ...full, last: false };
          offset += full.length;
          full = null;
        }
        if (current === null) {
          const path = join(dir, `part-${count++}`);
          current = { path, file: await open(path, 'w'), length: 0 };
        }
        const take = Math.min(size - current.length, rest.length);
        await writeAll(current.file, rest.subarray(0, take));
        current.length += take;
        rest = rest.subarray(take);
        if (current.length === size) {
          await current.file.close();
          full = { start: offset, length: size, path: current.path };
          current = null;
        }
      }
    }
    if (full !== null) yield { ...full, last: true };
    else if (current !== null) {
      await current.file.close();
      const { path, length } = current;
      current = null;
      yield { start: offset, length, path, last: true };
    }
  } finally {
    await current?.file.close().catch(() => undefined);
  }
}

async function writeAll(file: FileHandle, data: Buffer): Promise<void> {
  for (let written = 0; written < data.length; ) written += (await file.write(data, written)).bytesWritten;
}

async function fileSha256(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path, { highWaterMark: 1024 * 1024 })) hash.update(chunk as Buffer);
  return hash.digest('hex');
}
