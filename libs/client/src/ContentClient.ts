import { createReadStream } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PART_SIZE } from '#protocol';
import { names, type ContentList, type ContentListItem } from './api';
import { ApiCalls, header } from './ApiCalls';
import { DirectTransfer } from './DirectTransfer';
import { reprDigests } from './digests';
import { downloadToFile } from './FileDownload';
import { ApiError, ContentStateError, TransportError } from './errors';
import { RetryPolicy, type RetryNotice } from './RetryPolicy';
import { fileParts, streamParts } from './PartSources';
import { uploadParts } from './PartUpload';
import type { ContentStatus, DownloadOptions, StreamUploadOptions, UploadOptions } from './options';
import { parseReceivedRanges } from './ranges';
import { fetchReceipt, type VerifiedReceipt } from './Receipt';
import { Session, type Credentials, type SessionPair } from './Session';
import { Transport } from './transport';
import { WebhookCalls } from './WebhookCalls';

/** How many times an upload of a file begins again after S3 lost what it had stored (409 uploadRestarted). */
const MAX_RESTARTS = 3;

export type { Credentials, SessionPair } from './Session';
export type { RetryNotice } from './RetryPolicy';
export type { ContentStatus, DownloadOptions, Progress, StreamUploadOptions, UploadOptions } from './options';

export interface ContentClientOptions {
  /** The gateway, e.g. https://content.example.com */
  baseUrl: string;
  credentials: Credentials;
  /**
   * How long each request (each part, each download range) keeps being retried after its first
   * retriable failure (503, 429, 408, 500, 502, 504, a refused or broken connection), in ms: default
   * 2 minutes, 0 for no retries. Waits grow exponentially with full jitter, never shorter than
   * Retry-After (capped at 60 s).
   */
  retryForMs?: number;
  /** Called before each wait for a retry (e.g. to show "waiting 4 s: service unavailable (503)"). */
  onRetry?: (notice: RetryNotice) => void;
  /** Called after a refresh replaced the session, so callers can save the new pair. */
  onCredentials?: (credentials: Credentials) => void;
  /**
   * Upload part size, at most (and by default) 64 MiB. Parts on the 64 MiB grid stream straight
   * into S3; other sizes are staged by the service (slower). Smaller sizes are for tests.
   */
  partSize?: number;
  /**
   * Where HTTPS_PROXY, HTTP_PROXY and NO_PROXY (or their lower-case forms) are read from, as
   * curl and most HTTP clients do: default `process.env`; `null` for no proxy at all.
   */
  proxyEnv?: Record<string, string | undefined> | null;
  /** How long a connection may stay silent before its attempt fails and is retried (default 60 s for reads, 330 s for writes). */
  silenceMs?: { read: number; write: number };
}

/**
 * The content API for programs: uploads of files in 64 MiB parts (N in flight, each streamed from
 * disk, retried, resumable), downloads by ranges into a file, status, certificate sign-in and
 * session refresh. A 401 with a refresh token at hand refreshes the session once and retries.
 */
export class ContentClient {
  readonly transport: Transport;
  private readonly session: Session;
  private readonly api: ApiCalls;
  private readonly partSize: number;
  /** The owner's webhooks: create, list, delete. */
  readonly webhooks: WebhookCalls;

  constructor(options: ContentClientOptions) {
    this.transport = new Transport(options.proxyEnv === undefined ? process.env : options.proxyEnv, options.silenceMs);
    const base = new URL(options.baseUrl);
    const retries = new RetryPolicy({ retryForMs: options.retryForMs, onRetry: options.onRetry });
    this.session = new Session(this.transport, base, options.credentials, options, retries);
    this.api = new ApiCalls(this.transport, this.session, base, retries);
    this.webhooks = new WebhookCalls(this.api);
    this.partSize = options.partSize ?? PART_SIZE;
    if (!Number.isInteger(this.partSize) || this.partSize < 1 || this.partSize > PART_SIZE)
      throw new RangeError(`partSize must be 1..${PART_SIZE}`);
  }

  get currentCredentials(): Credentials {
    return this.session.current;
  }

  close(): void {
    this.transport.close();
  }

  async status(owner: string, id: string, signal?: AbortSignal): Promise<ContentStatus> {
    const res = await this.api.call({
      method: 'HEAD',
      url: this.api.url(`/v1/${owner}/contents/${id}`),
      headers: {},
      signal,
    });
    const total = header(res, names.contentTotal);
    const digests = reprDigests(header(res, names.reprDigest));
    return {
      state: header(res, names.uploadState) === 'ready' ? 'ready' : 'uploading',
      total: total !== undefined && total !== '' ? Number(total) : null,
      received: parseReceivedRanges(header(res, names.receivedRanges)),
      etag: header(res, names.etag) ?? null,
      contentType: header(res, names.answerContentType) ?? null,
      sha256: digests['sha-256'] ?? null,
      crc64nvme: digests.crc64nvme ?? null,
    };
  }

  /**
   * Uploads a file; returns the content id. A path that is not a regular file (a named pipe,
   * `<(...)`, a device) has no length to read up front: it is read through as a stream.
   */
  async uploadFile(path: string, opts: UploadOptions): Promise<string> {
    if (!(await stat(path)).isFile()) return this.uploadStream(createReadStream(path), opts);
    const direct = opts.direct ? new DirectTransfer(this.api) : null;
    let id = opts.resume;
    const onContentId = (cid: string) => {
      id = cid;
      opts.onContentId?.(cid);
    };
    for (let attempt = 1; ; attempt++) {
      const source = await fileParts(path, this.partSize);
      try {
        const done = await uploadParts(
          this.api,
          source,
          { ...opts, resume: id, onContentId },
          (cid) => this.status(opts.owner, cid, opts.signal),
          direct,
        );
        // Each part was checked as read; a file written meanwhile may have been read half old, half new.
        await source.unchanged(done);
        return done;
      } catch (error) {
        // S3 lost the parts stored so far and the upload began again (409 uploadRestarted): the
        // file is there to send them again, as a resume does (a few times at most).
        if (!(error instanceof ApiError && error.code === 'uploadRestarted') || !id || attempt === MAX_RESTARTS)
          throw error;
      }
    }
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
      const parts = streamParts(source, this.partSize, spool, opts.size ?? null);
      const direct = opts.direct ? new DirectTransfer(this.api) : null;
      return await uploadParts(this.api, parts, opts, (id) => this.status(opts.owner, id, opts.signal), direct);
    } finally {
      await rm(spool, { recursive: true, force: true });
    }
  }

  /**
   * Downloads a ready content into `path` by ranges, N in flight, each written at its offset.
   * Until it is complete the data lives in `<path>.partial` beside `<path>.partial.json` (the
   * ranges done), so an interrupted download can resume; the length, the SHA-256 asked for and
   * the one the service names (Repr-Digest) are checked before the file takes its name.
   */
  async downloadFile(id: string, path: string, opts: DownloadOptions): Promise<{ bytes: number; sha256: string }> {
    const status = await this.status(opts.owner, id, opts.signal);
    if (status.state !== 'ready' || status.total === null)
      throw new ContentStateError('contentNotReady', `content ${id} is still being uploaded`);
    return downloadToFile(this.api, { ...status, total: status.total }, id, path, opts);
  }

  /**
   * A ready content's receipt, signed by the platform, checked: its signature (against
   * `certificate`, the platform's receipt certificate in PEM or DER, when given; else only against
   * the certificate the receipt carries: `signer.checkedAgainst` says which), and that its
   * document names this content and owner. A receipt that fails a check is a ReceiptError.
   */
  async receipt(
    owner: string,
    id: string,
    opts: { certificate?: string | Buffer; signal?: AbortSignal } = {},
  ): Promise<VerifiedReceipt> {
    return fetchReceipt(this.api, owner, id, opts);
  }

  /**
   * Deletes a ready content, or aborts an unfinished upload. A DELETE retried after its answer was
   * lost may find the content gone: that retry is an ApiError 404 `contentNotFound`.
   */
  async delete(owner: string, id: string, signal?: AbortSignal): Promise<void> {
    await this.api.call({ method: 'DELETE', url: this.api.url(`/v1/${owner}/contents/${id}`), headers: {}, signal });
  }

  /** One page of the owner's contents in id order; pass its `next-cursor` as `cursor` for the next. */
  async list(
    owner: string,
    opts: { limit?: number; cursor?: string | null; signal?: AbortSignal } = {},
  ): Promise<ContentList> {
    const url = this.api.url(`/v1/${owner}/contents`);
    if (opts.limit !== undefined) url.searchParams.set('limit', String(opts.limit));
    if (opts.cursor) url.searchParams.set('cursor', opts.cursor);
    const res = await this.api.call({ method: 'GET', url, headers: {}, signal: opts.signal });
    return JSON.parse(res.text) as ContentList;
  }

  /** Every content of the owner, page after page (`limit` per page, default 1000). */
  async *listAll(
    owner: string,
    opts: { limit?: number; signal?: AbortSignal } = {},
  ): AsyncGenerator<ContentListItem, void, undefined> {
    let cursor: string | null = null;
    do {
      const page: ContentList = await this.list(owner, { limit: opts.limit ?? 1000, cursor, signal: opts.signal });
      yield* page.items;
      if (page['next-cursor'] !== null && page['next-cursor'] === cursor)
        throw new TransportError('the listing answered the same cursor again');
      cursor = page['next-cursor'];
    } while (cursor !== null);
  }

  /** Certificate sign-in: authenticate-by-cert, open the challenge with the key, approve-cert. */
  signIn(opts: {
    certificatePem: string;
    privateKeyPem: string;
    apiKey: string;
    signal?: AbortSignal;
  }): Promise<SessionPair> {
    return this.session.signIn(opts);
  }

  /** Rotates the session; the old pair stops working. Concurrent callers share one rotation. */
  refresh(signal?: AbortSignal): Promise<SessionPair> {
    return this.session.refresh(signal);
  }
}
