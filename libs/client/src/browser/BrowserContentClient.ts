// The content API from a web page: no Node.js built-in, only what browsers have (XMLHttpRequest
// for uploads, whose progress fetch cannot report; fetch for downloads; WebCrypto for the SHA-256 of
// each part; hash-wasm's WebAssembly for the digests of a whole download, which WebCrypto cannot
// take piece by piece). Bundled on its own: dist/browser/content-client.js (scripts/bundle-browser.mjs).
import { createCRC64, createSHA256, type IHasher } from 'hash-wasm';
import { formatContentRange } from '#protocol/contentRange';
import { HEADERS } from '#protocol/headers';
import { PART_SIZE } from '#protocol/limits';
import { parseReceivedRanges } from '#protocol/receivedRanges';
import { ApiError, ContentStateError, IntegrityError, TransportError } from '../errors';
import { inFlight } from '../inFlight';
import { missingParts, splitIntoParts, type ByteRange } from '../ranges';

export interface BrowserClientOptions {
  /** Where the API is, e.g. `https://content.example.com` (its origin must allow the page's: CORS). */
  baseUrl: string;
  /** A Bearer token for the owners the page works for, or a function giving the current one. */
  token: string | (() => string | Promise<string>);
  /**
   * How many times a request is sent again after it failed on the way or was answered 429 or 5xx
   * (after Retry-After when the answer names one, else 0.5 s doubling up to 8 s). Default 5.
   */
  retries?: number;
  /** Told of each request sent again: which attempt comes, after how long, and why. */
  onRetry?: (notice: { attempt: number; delayMs: number; reason: string }) => void;
}

export interface BrowserUploadOptions {
  owner: string;
  contentType?: string;
  /** Parts in flight, each read whole into memory to take its SHA-256 first. Default 4. */
  concurrency?: number;
  /** The id of an unfinished upload of the same file to go on with: only the parts it lacks are sent. */
  resume?: string;
  /** Bytes the service has taken so far, of `total`; called as each request's body goes out. */
  onProgress?: (progress: { done: number; total: number }) => void;
  /** The content's id, as soon as its first part created it (keep it to resume). */
  onContentId?: (id: string) => void;
  signal?: AbortSignal;
}

export interface BrowserContentStatus {
  state: 'uploading' | 'ready';
  total: number | null;
  received: ByteRange[];
  /** Repr-Digest's digests by algorithm (base64), once the content is ready. */
  digests: Record<string, string>;
}

export interface BrowserDownload {
  body: Blob;
  /** The content's whole length. */
  total: number;
  /** Which of the content's digests were checked against the bytes read (a whole download only). */
  checked: string[];
}

interface Answer {
  status: number;
  headers: Record<string, string>;
  text: string;
}

interface Call {
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: ArrayBuffer;
  signal?: AbortSignal;
  /** Bytes of the body sent so far (an upload's progress). */
  onSent?: (bytes: number) => void;
}

/** How many passes over the parts still missing an upload makes before it gives up. */
const PASSES = 3;

/**
 * Uploads a `File` (any Blob) in 64 MiB parts, `concurrency` at a time in any order, each with the
 * SHA-256 of its bytes (Content-Digest) so the service keeps no byte changed on the way; resumes an
 * unfinished upload from what the service holds; downloads a content, or a byte range of it.
 */
export class BrowserContentClient {
  private readonly base: string;
  private readonly retries: number;

  constructor(private readonly options: BrowserClientOptions) {
    this.base = options.baseUrl.replace(/\/+$/, '');
    this.retries = options.retries ?? 5;
  }

  /** Uploads `file` as a new content of `opts.owner` (or goes on with `opts.resume`); returns its id. */
  async upload(file: Blob, opts: BrowserUploadOptions): Promise<string> {
    if (!globalThis.crypto?.subtle)
      throw new TypeError('uploads need WebCrypto, which browsers give pages of secure contexts only (https:)');
    const total = file.size;
    const contentType = opts.contentType ?? (file.type || 'application/octet-stream');
    const parts = splitIntoParts(total, PART_SIZE);
    const sent = new Map<number, number>();
    const progress = () => {
      let done = 0;
      for (const bytes of sent.values()) done += bytes;
      opts.onProgress?.({ done, total });
    };
    const sendPart = async (method: 'POST' | 'PUT', path: string, part: ByteRange): Promise<Answer> => {
      // Read once and sent as read: the digest is of the very bytes that go.
      const bytes = await file.slice(part.start, part.end + 1).arrayBuffer();
      return this.call({
        method,
        path,
        headers: {
          'Content-Type': contentType,
          [HEADERS.contentRange]: formatContentRange(part, total),
          [HEADERS.contentDigest]: await sha256Field(bytes),
        },
        body: bytes,
        signal: opts.signal,
        onSent: (n) => {
          sent.set(part.start, n);
          progress();
        },
      });
    };

    let id = opts.resume;
    let missing: ByteRange[];
    if (id !== undefined) {
      const now = await this.status(opts.owner, id, opts.signal);
      if (now.total !== null && now.total !== total)
        throw new ContentStateError('totalConflict', `content ${id} is ${now.total} bytes long, the file ${total}`);
      if (now.state === 'ready') {
        opts.onProgress?.({ done: total, total });
        return id;
      }
      missing = missingParts(parts, now.received);
      for (const p of parts) if (!missing.includes(p)) sent.set(p.start, p.end - p.start + 1);
      progress();
    } else if (total === 0) {
      const empty = new ArrayBuffer(0);
      const res = await this.call({
        method: 'POST',
        path: `/v1/${opts.owner}/contents`,
        headers: { 'Content-Type': contentType, [HEADERS.contentDigest]: await sha256Field(empty) },
        body: empty,
        signal: opts.signal,
      });
      opts.onProgress?.({ done: 0, total: 0 });
      return createdId(res);
    } else {
      // The first part creates the content; the others may then go in any order.
      id = createdId(await sendPart('POST', `/v1/${opts.owner}/contents`, parts[0]!));
      missing = parts.slice(1);
    }
    opts.onContentId?.(id);
    const path = `/v1/${opts.owner}/contents/${id}`;
    for (let pass = 0; ; pass++) {
      await inFlight(opts.concurrency ?? 4, missing, (part) => sendPart('PUT', path, part));
      const now = await this.status(opts.owner, id, opts.signal);
      if (now.state === 'ready') {
        if (now.total !== total) throw new IntegrityError(`content ${id} is ${now.total} bytes long, not ${total}`);
        return id;
      }
      // Ranges the service had to let go of (an upload S3 lost: 409 uploadRestarted) are sent again.
      missing = missingParts(parts, now.received);
      if (pass + 1 >= PASSES)
        throw new ContentStateError('contentNotReady', `all parts were sent but content ${id} is not complete`);
    }
  }

  /** Where an upload stands (HEAD): uploading with the ranges received, or ready with its digests. */
  async status(owner: string, id: string, signal?: AbortSignal): Promise<BrowserContentStatus> {
    const res = await this.call({ method: 'HEAD', path: `/v1/${owner}/contents/${id}`, signal });
    const total = res.headers[HEADERS.contentTotal.toLowerCase()] ?? res.headers['content-length'];
    return {
      state: res.headers[HEADERS.uploadState.toLowerCase()] === 'ready' ? 'ready' : 'uploading',
      total: total === undefined ? null : Number(total),
      received: parseReceivedRanges(res.headers[HEADERS.receivedRanges.toLowerCase()]),
      digests: parseDigests(res.headers[HEADERS.reprDigest.toLowerCase()]),
    };
  }

  /**
   * A ready content, or the bytes `range` (inclusive) of it. A whole one is checked against the
   * digests the service names for it (Repr-Digest: its SHA-256 and CRC-64/NVME, where it has them).
   */
  async download(
    owner: string,
    id: string,
    opts: { range?: ByteRange; signal?: AbortSignal; onProgress?: (bytes: number) => void } = {},
  ): Promise<BrowserDownload> {
    const headers: Record<string, string> = { authorization: `Bearer ${await this.token()}` };
    if (opts.range) headers[HEADERS.range] = `bytes=${opts.range.start}-${opts.range.end}`;
    const res = await this.withRetries(async () => {
      let answer: Response;
      try {
        answer = await fetch(`${this.base}/v1/${owner}/contents/${id}`, { headers, signal: opts.signal });
      } catch (error) {
        throw new TransportError(`GET of content ${id} failed on the way: ${String(error)}`, { cause: error });
      }
      if (answer.ok) return answer;
      throw ApiError.fromResponse(answer.status, await answer.text(), headerRecord(answer.headers));
    }, opts.signal);
    const digests = parseDigests(res.headers.get(HEADERS.reprDigest) ?? undefined);
    const whole = res.status === 200;
    const total = whole
      ? Number(res.headers.get('content-length'))
      : Number(/\/(\d+)$/.exec(res.headers.get(HEADERS.contentRange) ?? '')?.[1]);
    const hashers: [string, IHasher][] = whole
      ? [
          ...(digests['sha-256'] ? [['sha-256', await createSHA256()] as [string, IHasher]] : []),
          ...(digests.crc64nvme ? [['crc64nvme', await createCRC64(NVME_POLYNOMIAL)] as [string, IHasher]] : []),
        ]
      : [];
    for (const [, h] of hashers) h.init();
    const chunks: Uint8Array[] = [];
    let read = 0;
    const reader = res.body!.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      read += value.length;
      for (const [, h] of hashers) h.update(value);
      opts.onProgress?.(read);
    }
    const expected = opts.range ? Math.min(opts.range.end, total - 1) - opts.range.start + 1 : total;
    if (read !== expected) throw new IntegrityError(`content ${id}: ${read} bytes came, not ${expected}`);
    for (const [algorithm, h] of hashers) {
      const got = base64(h.digest('binary'));
      if (got !== digests[algorithm])
        throw new IntegrityError(`content ${id}: the ${algorithm} of the bytes read is not the one the service names`);
    }
    return { body: new Blob(chunks as BlobPart[]), total, checked: hashers.map(([a]) => a) };
  }

  /** Deletes a ready content, or aborts an unfinished upload. */
  async delete(owner: string, id: string, signal?: AbortSignal): Promise<void> {
    await this.call({ method: 'DELETE', path: `/v1/${owner}/contents/${id}`, signal });
  }

  private async token(): Promise<string> {
    const { token } = this.options;
    return typeof token === 'string' ? token : token();
  }

  private async call(call: Call): Promise<Answer> {
    return this.withRetries(async () => {
      const res = await send(`${this.base}${call.path}`, call, await this.token());
      if (res.status < 300) return res;
      throw ApiError.fromResponse(res.status, res.text, res.headers);
    }, call.signal);
  }

  /** `attempt` again after a failure on the way, a 429 or a 5xx, at most `retries` times. */
  private async withRetries<T>(attempt: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    for (let n = 0; ; n++) {
      try {
        return await attempt();
      } catch (error) {
        const again =
          error instanceof TransportError ||
          (error instanceof ApiError && (error.status === 429 || error.status >= 500));
        if (!again || n >= this.retries || signal?.aborted) throw error;
        const waitMs = Math.min(
          (error instanceof ApiError ? error.retryAfterMs : null) ?? Math.min(500 * 2 ** n, 8_000),
          60_000,
        );
        this.options.onRetry?.({ attempt: n + 2, delayMs: waitMs, reason: (error as Error).message });
        await sleep(waitMs, signal);
      }
    }
  }
}

/** CRC-64/NVME's polynomial, bit-reflected, as hash-wasm takes it. */
const NVME_POLYNOMIAL = '9a6c9329ac4bc9b5';

/** One request by XMLHttpRequest (its upload reports progress); a failure on the way is a TransportError. */
function send(url: string, call: Call, token: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    if (call.signal?.aborted) return reject(call.signal.reason);
    const xhr = new XMLHttpRequest();
    xhr.open(call.method, url);
    xhr.setRequestHeader('Authorization', `Bearer ${token}`);
    for (const [name, value] of Object.entries(call.headers ?? {})) xhr.setRequestHeader(name, value);
    if (call.onSent) xhr.upload.onprogress = (event) => call.onSent!(event.loaded);
    const onAbort = () => xhr.abort();
    call.signal?.addEventListener('abort', onAbort, { once: true });
    const settle = () => call.signal?.removeEventListener('abort', onAbort);
    xhr.onload = () => {
      settle();
      resolve({ status: xhr.status, headers: parseHeaderLines(xhr.getAllResponseHeaders()), text: xhr.responseText });
    };
    const failed = (what: string) => () => {
      settle();
      reject(
        call.signal?.aborted
          ? call.signal.reason
          : new TransportError(`${call.method} ${new URL(url).pathname} ${what}`),
      );
    };
    xhr.onerror = failed('failed on the way (network, or a CORS refusal)');
    xhr.onabort = failed('was aborted');
    xhr.ontimeout = failed('timed out');
    xhr.send(call.body ?? null);
  });
}

/** `getAllResponseHeaders()`'s lines as a record with lower-case names (the ones CORS lets the page read). */
function parseHeaderLines(raw: string): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const line of raw.trim().split(/[\r\n]+/)) {
    const at = line.indexOf(':');
    if (at > 0) headers[line.slice(0, at).trim().toLowerCase()] = line.slice(at + 1).trim();
  }
  return headers;
}

function headerRecord(headers: Headers): Record<string, string> {
  const record: Record<string, string> = {};
  headers.forEach((value, name) => (record[name] = value));
  return record;
}

/** Repr-Digest's fields (`sha-256=:<base64>:, crc64nvme=:<base64>:`) by algorithm; unknown ones ignored. */
function parseDigests(header: string | undefined): Record<string, string> {
  const digests: Record<string, string> = {};
  for (const m of (header ?? '').matchAll(/([a-z0-9-]+)=:([A-Za-z0-9+/=]*):/g)) digests[m[1]!] = m[2]!;
  return digests;
}

function createdId(res: Answer): string {
  const id = (JSON.parse(res.text) as { id?: unknown }).id;
  if (typeof id !== 'string') throw new IntegrityError('the service created a content but named no id');
  return id;
}

/** A Content-Digest field of `bytes`' SHA-256, taken by WebCrypto: `sha-256=:<base64>:`. */
async function sha256Field(bytes: ArrayBuffer): Promise<string> {
  return `sha-256=:${base64(new Uint8Array(await crypto.subtle.digest('SHA-256', bytes)))}:`;
}

function base64(bytes: Uint8Array): string {
  let binary = '';
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary);
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
