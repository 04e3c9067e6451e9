// S3 as the content-service sees it: the deadlines and stall watchdogs of every call, its errors,
// what it answers of an object, the bucket's setup, key listings and deletions, and the ObjectStore
// class that every other module asks.
import { Readable } from 'node:stream';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  HeadBucketCommand,
  ListObjectsV2Command,
  ListPartsCommand,
  PutBucketLifecycleConfigurationCommand,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import { type DirectCall, DirectS3, S3Refusal } from './DirectS3';
import { type IncomingMessage } from 'node:http';
import { type ContentRange, type DigestAlgorithm, headerKey, HEADERS, parseContentRange } from '@cp/protocol';
import { Upload } from '@aws-sdk/lib-storage';
import { probeChecksumChecks } from './checksumProbe';
import { type BodyChecksum, ChecksumRefused, writeChecksum } from './writeChecksums';

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

export function unquote(etag: string): string {
  return etag.replace(/^"|"$/g, '');
}

export function isNotFound(error: unknown): boolean {
  if (error instanceof S3Refusal) return error.status === 404;
  if (!(error instanceof S3ServiceException)) return false;
  return (
    error.$metadata.httpStatusCode === 404 ||
    ['NoSuchKey', 'NotFound', 'NoSuchUpload', 'NoSuchBucket'].includes(error.name)
  );
}

/** S3's NoSuchUpload: the multipart upload named is not (or no longer) one S3 holds. */
export function isNoSuchUpload(error: unknown): boolean {
  if (error instanceof S3Refusal) return error.s3Code === 'NoSuchUpload';
  return error instanceof S3ServiceException && error.name === 'NoSuchUpload';
}

/**
 * No key the service writes names a folder, so an S3 server on a file system that answers this to a
 * write saw the key's folder removed midway (its last object deleted meanwhile): worth a retry.
 */
const FOLDER_REMOVED = 'ExistingObjectIsDirectory';

/** A failure of S3 itself (network, 5xx, a folder removed under a write), as opposed to a refusal of this request. */
export function isS3Unavailable(error: unknown): boolean {
  if (error instanceof S3ServiceException)
    return (error.$metadata.httpStatusCode ?? 500) >= 500 || error.name === FOLDER_REMOVED;
  if (error instanceof S3Refusal) return error.status >= 500 || error.s3Code === FOLDER_REMOVED;
  // The SDK's connection and socket timeouts are plain errors named TimeoutError, with no code.
  if (error instanceof Error && error.name === 'TimeoutError') return true;
  if (error instanceof StorageTimeout) return true;
  const code = (error as { code?: string } | null)?.code;
  return (
    typeof code === 'string' &&
    [
      'ECONNREFUSED',
      'ECONNRESET',
      'ETIMEDOUT',
      'EPIPE',
      'EHOSTUNREACH',
      'ENETUNREACH',
      'ENOTFOUND',
      'EAI_AGAIN',
    ].includes(code)
  );
}

/** S3's 416: the range starts at or past the object's end. */
export function isRangeRefused(error: unknown): boolean {
  if (error instanceof S3Refusal) return error.status === 416;
  return (
    error instanceof S3ServiceException && (error.$metadata.httpStatusCode === 416 || error.name === 'InvalidRange')
  );
}

/** The call's answer, or null when S3 says there is no such object, upload or bucket. */
export async function orNull<O>(call: Promise<O>): Promise<O | null> {
  try {
    return await call;
  } catch (error) {
    if (isNotFound(error)) return null;
    throw error;
  }
}

/** What S3 answers about an object: the record of a finished content. */
export interface ObjectInfo {
  /** The whole object's size. */
  contentLength: number;
  etag: string;
  contentType: string;
  lastModified: Date | null;
  /** User metadata (`x-amz-meta-*`), names in lower case. */
  metadata: Record<string, string>;
  /** Digests of the whole object: S3's full-object CRC-64/NVME, and the SHA-256 it was stored with, where known. */
  digests: Partial<Record<DigestAlgorithm, Buffer>>;
}

/** What S3's answer to a HeadObject or GetObject says of the object; `contentLength` is the whole object's. */
export function infoOf(res: IncomingMessage, contentLength: number): ObjectInfo {
  const metadata: Record<string, string> = {};
  for (const [name, value] of Object.entries(res.headers))
    if (name.startsWith('x-amz-meta-') && typeof value === 'string') metadata[name.slice(11)] = value;
  const modified = res.headers['last-modified'];
  return {
    contentLength,
    etag: res.headers.etag ?? '',
    contentType: res.headers['content-type'] ?? 'application/octet-stream',
    lastModified: modified ? new Date(modified) : null,
    metadata,
    digests: digestsOf(res, metadata),
  };
}

/**
 * The whole-object digests in S3's answer (asked for with `x-amz-checksum-mode: ENABLED`): its
 * CRC-64/NVME when S3 says it covers the whole object (not a checksum of part checksums), and the
 * SHA-256 the object was stored with (S3's own, or the one checked on the way in and kept in metadata).
 */
function digestsOf(res: IncomingMessage, metadata: Record<string, string>): ObjectInfo['digests'] {
  const digests: ObjectInfo['digests'] = {};
  const header = (name: string) => {
    const value = res.headers[name];
    return typeof value === 'string' ? value : undefined;
  };
  const fullObject = (header('x-amz-checksum-type') ?? 'FULL_OBJECT') === 'FULL_OBJECT';
  const sha256 = Buffer.from((fullObject && header('x-amz-checksum-sha256')) || metadata.sha256 || '', 'base64');
  if (sha256.length === 32) digests['sha-256'] = sha256;
  const crc = Buffer.from(header('x-amz-checksum-crc64nvme') ?? '', 'base64');
  if (fullObject && crc.length === 8) digests.crc64nvme = crc;
  return digests;
}

/** Asks S3 to answer with the object's checksums (HeadObject, GetObject). */
export const CHECKSUM_MODE = { 'x-amz-checksum-mode': 'ENABLED' } as const;

/** User metadata as the request headers that carry it. */
export function metaHeaders(metadata: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(metadata).map(([name, value]) => [`x-amz-meta-${name}`, value]));
}

export interface StoredObject {
  body: Readable;
  contentLength: number;
}

export interface ObjectStoreTimeouts {
  /**
   * How long a call without a streamed body may wait for S3's answer (its headers), SDK retries
   * included. CompleteMultipartUpload, which S3 may take minutes over for a large object, is left out.
   */
  callMs: number;
  /** How long a streamed body may make no progress that S3 is to blame for before the call fails. */
  stallMs: number;
}

/** An object as GetObject serves it: `start` and `ranged` tell whether S3 served the range asked for. */
export type ServedObject = StoredObject & { info: ObjectInfo; start: number; ranged: boolean };

/** The range S3 says it served (its Content-Range); null when it served the whole object. */
export function servedRange(header: string | undefined): ContentRange | null {
  try {
    return header ? parseContentRange(header) : null;
  } catch {
    return null;
  }
}

/** Creates the bucket when `ping` (a HeadBucket) finds none; one created meanwhile by another replica is fine. */
export async function ensureBucket(s3: S3Client, bucket: string, bounded: Bounded, ping: () => Promise<void>) {
  try {
    await ping();
  } catch (error) {
    if (!isNotFound(error)) throw error;
    try {
      await bounded((abortSignal) => s3.send(new CreateBucketCommand({ Bucket: bucket }), { abortSignal }));
    } catch (createError) {
      if (!(createError instanceof S3ServiceException && /BucketAlready(Exists|OwnedByYou)/.test(createError.name)))
        throw createError;
    }
  }
}

/**
 * Sets the rule that aborts multipart uploads `days` after they began: the backstop for uploads the
 * sweeper never saw. False when the server refuses it (not every S3 server supports it).
 */
export async function setAbortIncompleteUploadsRule(
  s3: S3Client,
  bucket: string,
  days: number,
  bounded: Bounded,
): Promise<boolean> {
  const rule = {
    ID: 'abort-incomplete-multipart-uploads',
    Status: 'Enabled' as const,
    Filter: { Prefix: '' },
    AbortIncompleteMultipartUpload: { DaysAfterInitiation: days },
  };
  const command = new PutBucketLifecycleConfigurationCommand({
    Bucket: bucket,
    LifecycleConfiguration: { Rules: [rule] },
  });
  try {
    await bounded((abortSignal) => s3.send(command, { abortSignal }));
    return true;
  } catch (error) {
    // 4xx: refused; 501: the server has no lifecycle rules at all (versitygw)
    const status = error instanceof S3ServiceException ? (error.$metadata.httpStatusCode ?? 500) : 500;
    if (status < 500 || status === 501) return false;
    throw error;
  }
}

/** One page of keys, in S3's order (UTF-8 binary), and their objects' sizes; `truncated` when more follow the last. */
export interface KeyPage {
  keys: string[];
  sizes: number[];
  truncated: boolean;
}

/**
 * Up to `max` (at most 1,000) keys under `prefix` that sort after `startAfter`: one
 * ListObjectsV2, whose cost depends on the keys under the prefix, not on the rest of the bucket.
 */
export async function listKeys(
  s3: S3Client,
  bucket: string,
  page: { prefix: string; startAfter?: string; max: number },
  bounded: Bounded,
): Promise<KeyPage> {
  const command = new ListObjectsV2Command({
    Bucket: bucket,
    Prefix: page.prefix,
    StartAfter: page.startAfter,
    MaxKeys: page.max,
  });
  const out = await bounded((abortSignal) => s3.send(command, { abortSignal }));
  const objects = (out.Contents ?? []).filter((object) => object.Key);
  return {
    keys: objects.map((object) => object.Key!),
    sizes: objects.map((object) => object.Size ?? 0),
    truncated: out.IsTruncated === true,
  };
}

/** Deletes objects, up to 1,000 per request. Keys that do not exist are not an error. */
export async function deleteMany(s3: S3Client, bucket: string, keys: string[], bounded: Bounded): Promise<void> {
  for (let i = 0; i < keys.length; i += 1000) {
    const batch = keys.slice(i, i + 1000);
    if (batch.length === 1) {
      await bounded((abortSignal) =>
        s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: batch[0] }), { abortSignal }),
      );
      continue;
    }
    const Delete = { Objects: batch.map((Key) => ({ Key })), Quiet: true };
    const command = new DeleteObjectsCommand({ Bucket: bucket, Delete });
    const out = await bounded((abortSignal) => s3.send(command, { abortSignal }));
    const failed = (out.Errors ?? []).filter((e) => e.Code !== 'NoSuchKey');
    const first = failed[0];
    if (first)
      throw new Error(
        `S3 could not delete ${failed.length} objects, first ${first.Key}: ${first.Code} ${first.Message ?? ''}`,
      );
  }
}

/** Deletes every object under a prefix, a page of 1,000 at a time (see listKeys); returns how many. */
export async function deletePrefix(s3: S3Client, bucket: string, prefix: string, bounded: Bounded): Promise<number> {
  let deleted = 0;
  let startAfter: string | undefined;
  for (;;) {
    const page = await listKeys(s3, bucket, { prefix, startAfter, max: 1000 }, bounded);
    await deleteMany(s3, bucket, page.keys, bounded);
    deleted += page.keys.length;
    if (!page.truncated || page.keys.length === 0) return deleted;
    startAfter = page.keys[page.keys.length - 1];
  }
}

export { ChecksumRefused } from './writeChecksums';
export type { BodyChecksum } from './writeChecksums';

/** Everything the content-service asks of S3, behind one small class. */
export class ObjectStore {
  private readonly timeouts: ObjectStoreTimeouts;

  /** HeadObject, GetObject, PutObject and UploadPart, without the SDK's middleware. */
  private readonly direct: DirectS3;

  constructor(
    private readonly s3: S3Client,
    readonly bucket: string,
    timeouts: Partial<ObjectStoreTimeouts> = {},
  ) {
    this.timeouts = { callMs: 3_000, stallMs: 3_000, ...timeouts };
    this.direct = new DirectS3(s3, bucket);
  }

  /** The bucket and key of a call's input. */
  private at(key: string): { Bucket: string; Key: string } {
    return { Bucket: this.bucket, Key: key };
  }

  /** A call without a streamed body, with a deadline on its answer (see withDeadline). */
  private bounded<O>(send: (abortSignal: AbortSignal) => Promise<O>, outer?: AbortSignal): Promise<O> {
    return withDeadline(this.timeouts.callMs, send, outer);
  }

  /** A call whose body is a stream, watched for S3's progress (see streamInto). */
  private streaming<O>(
    body: Readable,
    send: (watched: Readable, abortSignal: AbortSignal) => Promise<O>,
    signal?: AbortSignal,
  ): Promise<O> {
    return streamInto(body, this.timeouts.stallMs, send, signal);
  }

  /** Creates the bucket when it does not exist (see ensureBucket). */
  ensureBucket(): Promise<void> {
    return ensureBucket(
      this.s3,
      this.bucket,
      (send) => this.bounded(send),
      () => this.ping(),
    );
  }

  /** The backstop for uploads the sweeper never saw; false where the server refuses it (see setAbortIncompleteUploadsRule). */
  setAbortIncompleteUploadsRule(days: number): Promise<boolean> {
    return setAbortIncompleteUploadsRule(this.s3, this.bucket, days, (send) => this.bounded(send));
  }

  async ping(): Promise<void> {
    await this.bounded((abortSignal) => this.s3.send(new HeadBucketCommand({ Bucket: this.bucket }), { abortSignal }));
  }

  /**
   * Keeps each folder (a key prefix ending in `/`) by an empty object `<prefix>.keep`, written when
   * missing. An S3 server on a file system (versitygw's posix backend) removes a directory once its
   * last object goes; a write into it that races the removal fails (409 ExistingObjectIsDirectory,
   * after its body was taken). A folder that holds an object is never removed.
   */
  async keepFolders(prefixes: readonly string[]): Promise<void> {
    for (const prefix of prefixes) {
      const key = `${prefix}.keep`;
      if (await this.head(key)) continue;
      await this.putObject(key, Readable.from([]), 0, 'application/octet-stream');
    }
  }

  /** Whether writes carry checksums S3 checks (probeChecksums); until known, none, and the service checks digests. */
  checksumsChecked = false;

  /**
   * Learns whether S3 checks the checksums writes carry (see checksumProbe), asking with a store of
   * its own that sends them, so that no request sends one meanwhile; from then on every write does.
   */
  async probeChecksums(): Promise<boolean> {
    const asking = new ObjectStore(this.s3, this.bucket, this.timeouts);
    asking.checksumsChecked = true;
    try {
      this.checksumsChecked = await probeChecksumChecks(asking);
    } finally {
      asking.direct.destroy();
    }
    return this.checksumsChecked;
  }

  /** A streamed PUT (PutObject or UploadPart) with its checksum; S3's refusal of that checksum is a ChecksumRefused. */
  private async put(
    call: Omit<DirectCall, 'method' | 'trailer'> & { body: Readable },
    checksum: { given?: BodyChecksum; whole: boolean },
    signal?: AbortSignal,
  ): Promise<IncomingMessage> {
    const sum = this.checksumsChecked ? writeChecksum(checksum.given, checksum.whole) : { headers: {} };
    const headers = { ...call.headers, ...sum.headers };
    try {
      const res = await this.streaming(
        call.body,
        (watched, abortSignal) =>
          this.direct.send({ ...call, method: 'PUT', headers, body: watched, trailer: sum.trailer }, abortSignal),
        signal,
      );
      res.resume();
      return res;
    } catch (error) {
      if (error instanceof S3Refusal && error.s3Code === 'BadDigest')
        throw new ChecksumRefused(sum.trailer === undefined, { cause: error });
      throw error;
    }
  }

  /** Stores an object; `whole`: a content's own object (not a staged piece), `digests`: the client's for the body. */
  async putObject(
    key: string,
    body: Readable,
    contentLength: number,
    contentType: string,
    options: { metadata?: Record<string, string>; digests?: BodyChecksum; whole?: boolean } = {},
  ): Promise<string> {
    const meta = metaHeaders(options.metadata ?? {});
    const headers = { 'content-length': String(contentLength), 'content-type': contentType, ...meta };
    const res = await this.put({ key, headers, body }, { given: options.digests, whole: options.whole ?? false });
    return String(res.headers.etag ?? '');
  }

  /**
   * Stores a body whose length is not known up front (a chunked one-shot upload): lib-storage
   * sends it in 8 MiB parts, one at a time, so at most one such part is in memory per request.
   */
  async putObjectOfUnknownLength(
    key: string,
    body: Readable,
    contentType: string,
    metadata?: Record<string, string>,
  ): Promise<string> {
    const out = await this.streaming(body, async (watched, abortSignal) => {
      const upload = new Upload({
        client: this.s3,
        params: { ...this.at(key), Body: watched, ContentType: contentType, Metadata: metadata },
        partSize: 8 * 1024 * 1024,
        queueSize: 1,
        leavePartsOnError: false,
      });
      abortSignal.addEventListener('abort', () => void upload.abort());
      return upload.done();
    });
    return out.ETag ?? '';
  }

  async createMultipartUpload(key: string, contentType: string, metadata?: Record<string, string>): Promise<string> {
    const command = new CreateMultipartUploadCommand({ ...this.at(key), ContentType: contentType, Metadata: metadata });
    const out = await this.bounded((abortSignal) => this.s3.send(command, { abortSignal }));
    if (!out.UploadId) throw new Error('S3 returned no UploadId');
    return out.UploadId;
  }

  /** Streams exactly `contentLength` bytes into part `partNumber`; returns its ETag. */
  async uploadPart(
    key: string,
    uploadId: string,
    partNumber: number,
    body: Readable,
    contentLength: number,
    signal?: AbortSignal,
    checksum?: BodyChecksum,
    /** Take a CRC-64/NVME trailer when the client named no digest (the checksum probe's). */
    whole = false,
  ): Promise<string> {
    const query = { partNumber: String(partNumber), uploadId };
    const headers = { 'content-length': String(contentLength) };
    const res = await this.put({ key, query, headers, body }, { given: checksum, whole }, signal);
    const etag = res.headers.etag;
    if (!etag) throw new Error('S3 returned no ETag for the part');
    return etag;
  }

  async completeMultipartUpload(
    key: string,
    uploadId: string,
    parts: { partNumber: number; etag: string }[],
    signal?: AbortSignal,
  ): Promise<void> {
    const Parts = parts.map((p) => ({ PartNumber: p.partNumber, ETag: p.etag }));
    const command = new CompleteMultipartUploadCommand({
      ...this.at(key),
      UploadId: uploadId,
      MultipartUpload: { Parts },
    });
    await this.s3.send(command, { abortSignal: signal });
  }

  /** The parts S3 holds for a multipart upload: part number → ETag (without quotes) and size. */
  async listParts(
    key: string,
    uploadId: string,
    signal?: AbortSignal,
  ): Promise<Map<number, { etag: string; size: number }>> {
    const parts = new Map<number, { etag: string; size: number }>();
    let marker: string | undefined;
    do {
      const command = new ListPartsCommand({ ...this.at(key), UploadId: uploadId, PartNumberMarker: marker });
      const page = await this.bounded((abortSignal) => this.s3.send(command, { abortSignal }), signal);
      for (const p of page.Parts ?? []) parts.set(p.PartNumber!, { etag: unquote(p.ETag ?? ''), size: p.Size ?? -1 });
      marker = page.IsTruncated ? page.NextPartNumberMarker : undefined;
    } while (marker);
    return parts;
  }

  async abortMultipartUpload(key: string, uploadId: string): Promise<void> {
    const command = new AbortMultipartUploadCommand({ ...this.at(key), UploadId: uploadId });
    await orNull(this.bounded((abortSignal) => this.s3.send(command, { abortSignal })));
  }

  /** What S3 says of an object, or null when it does not exist. */
  async head(key: string): Promise<ObjectInfo | null> {
    const res = await orNull(this.read({ method: 'HEAD', key, headers: CHECKSUM_MODE }));
    res?.resume();
    return res && infoOf(res, Number(res.headers['content-length'] ?? 0));
  }

  /**
   * Streams an object, or the bytes S3 serves for `range` (an RFC 9110 `bytes=` range, clipped by
   * S3 to the object); null when the object does not exist. S3's refusal of the range (416) is thrown.
   */
  async get(key: string, range: string | undefined, signal?: AbortSignal): Promise<ServedObject | null> {
    const headers = range ? { range, ...CHECKSUM_MODE } : CHECKSUM_MODE;
    const res = await orNull(this.read({ method: 'GET', key, headers }, signal));
    if (!res) return null;
    const length = Number(res.headers['content-length'] ?? 0);
    const served = servedRange(res.headers[headerKey(HEADERS.contentRange)]);
    const body = watchedDownload(res, this.timeouts.stallMs);
    return {
      info: infoOf(res, served?.total ?? length),
      body,
      contentLength: length,
      start: served?.start ?? 0,
      ranged: !!served,
    };
  }

  /** Streams bytes [start, end] (inclusive) of an object; S3Refusal 404 when it is gone. */
  async getRange(key: string, start: number, end: number, signal?: AbortSignal): Promise<StoredObject> {
    return (await this.get(key, `bytes=${start}-${end}`, signal)) ?? Promise.reject(new S3Refusal(404));
  }

  /** A call without a body, bounded, sent again once when S3 failed it (a 5xx, a broken connection) before answering. */
  private async read(call: DirectCall, signal?: AbortSignal): Promise<IncomingMessage> {
    try {
      return await this.bounded((abortSignal) => this.direct.send(call, abortSignal), signal);
    } catch (error) {
      if (signal?.aborted || error instanceof StorageTimeout || !isS3Unavailable(error)) throw error;
      return this.bounded((abortSignal) => this.direct.send(call, abortSignal), signal);
    }
  }

  async delete(key: string): Promise<void> {
    await this.bounded((abortSignal) => this.s3.send(new DeleteObjectCommand(this.at(key)), { abortSignal }));
  }

  /** Deletes objects, up to 1,000 per request. Keys that do not exist are not an error. */
  deleteMany(keys: string[]): Promise<void> {
    return deleteMany(this.s3, this.bucket, keys, (send) => this.bounded(send));
  }

  /** Up to `max` keys under `prefix` after `startAfter`, in key order (see listKeys). */
  listKeys(prefix: string, startAfter: string | undefined, max: number): Promise<KeyPage> {
    return listKeys(this.s3, this.bucket, { prefix, startAfter, max }, (send) => this.bounded(send));
  }

  /** Deletes every object under a prefix (staged pieces of one content); returns how many. */
  deletePrefix(prefix: string): Promise<number> {
    return deletePrefix(this.s3, this.bucket, prefix, (send) => this.bounded(send));
  }
}
