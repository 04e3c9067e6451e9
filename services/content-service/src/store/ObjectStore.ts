import type { Readable } from 'node:stream';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  ListObjectsV2Command,
  ListPartsCommand,
  HeadBucketCommand,
  PutBucketLifecycleConfigurationCommand,
  S3Client,
  S3ServiceException,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { isNotFound, isS3Unavailable, orNull, unquote } from './s3Errors';
import type { IncomingMessage } from 'node:http';
import { DirectS3, S3Refusal, type DirectCall } from './DirectS3';
import {
  infoOf,
  metaHeaders,
  type ObjectInfo,
  type ObjectStoreTimeouts,
  type ServedObject,
  type StoredObject,
} from './ObjectInfo';
import { StorageTimeout, watchedDownload, watchedUpload } from './S3Progress';

export { isNotFound, isRangeRefused, isS3Unavailable, unquote } from './s3Errors';
export { StorageTimeout } from './S3Progress';
export type { ObjectInfo, ObjectStoreTimeouts, ServedObject, StoredObject } from './ObjectInfo';

/** Everything the content-service asks of S3, behind one small class. */
export class ObjectStore {
  private readonly timeouts: ObjectStoreTimeouts;

  /** HeadObject, GetObject and PutObject, without the SDK's middleware. */
  private readonly direct: DirectS3;

  constructor(
    private readonly s3: S3Client,
    readonly bucket: string,
    timeouts: Partial<ObjectStoreTimeouts> = {},
  ) {
    this.timeouts = { callMs: 3_000, stallMs: 3_000, ...timeouts };
    this.direct = new DirectS3(s3, bucket);
  }

  /**
   * Sends a call with a deadline on its answer. The deadline ends once the answer's headers came,
   * so a GetObject body streams as long as it flows (the socket's idle timeout watches it then).
   */
  private async bounded<O>(send: (abortSignal: AbortSignal) => Promise<O>, outer?: AbortSignal): Promise<O> {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), this.timeouts.callMs);
    const onOuterAbort = () => controller.abort();
    outer?.addEventListener('abort', onOuterAbort, { once: true });
    try {
      return await send(controller.signal);
    } catch (error) {
      if (controller.signal.aborted && !outer?.aborted)
        throw new StorageTimeout(`S3 did not answer within ${this.timeouts.callMs} ms`, { cause: error });
      throw error;
    } finally {
      clearTimeout(timer);
      outer?.removeEventListener('abort', onOuterAbort);
    }
  }

  async ensureBucket(): Promise<void> {
    try {
      await this.ping();
    } catch (error) {
      if (!isNotFound(error)) throw error;
      try {
        await this.bounded((abortSignal) =>
          this.s3.send(new CreateBucketCommand({ Bucket: this.bucket }), { abortSignal }),
        );
      } catch (createError) {
        if (!(createError instanceof S3ServiceException && /BucketAlready(Exists|OwnedByYou)/.test(createError.name)))
          throw createError;
      }
    }
  }

  /** The backstop for uploads the sweeper never saw; not every S3 server supports it. */
  async setAbortIncompleteUploadsRule(days: number): Promise<boolean> {
    const rule = {
      ID: 'abort-incomplete-multipart-uploads',
      Status: 'Enabled' as const,
      Filter: { Prefix: '' },
      AbortIncompleteMultipartUpload: { DaysAfterInitiation: days },
    };
    try {
      await this.bounded((abortSignal) =>
        this.s3.send(
          new PutBucketLifecycleConfigurationCommand({
            Bucket: this.bucket,
            LifecycleConfiguration: { Rules: [rule] },
          }),
          { abortSignal },
        ),
      );
      return true;
    } catch (error) {
      // 4xx: refused; 501: the server has no lifecycle rules at all (versitygw)
      const status = error instanceof S3ServiceException ? (error.$metadata.httpStatusCode ?? 500) : 500;
      if (status < 500 || status === 501) return false;
      throw error;
    }
  }

  async ping(): Promise<void> {
    await this.bounded((abortSignal) => this.s3.send(new HeadBucketCommand({ Bucket: this.bucket }), { abortSignal }));
  }

  async putObject(
    key: string,
    body: Readable,
    contentLength: number,
    contentType: string,
    metadata: Record<string, string> = {},
  ): Promise<string> {
    const headers = { 'content-length': String(contentLength), 'content-type': contentType, ...metaHeaders(metadata) };
    const res = await this.streaming(body, (watched, abortSignal) =>
      this.direct.send({ method: 'PUT', key, headers, body: watched }, abortSignal),
    );
    res.resume();
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
        params: { Bucket: this.bucket, Key: key, Body: watched, ContentType: contentType, Metadata: metadata },
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
    const out = await this.bounded((abortSignal) =>
      this.s3.send(
        new CreateMultipartUploadCommand({
          Bucket: this.bucket,
          Key: key,
          ContentType: contentType,
          Metadata: metadata,
        }),
        { abortSignal },
      ),
    );
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
  ): Promise<string> {
    const out = await this.streaming(
      body,
      (watched, abortSignal) =>
        this.s3.send(
          new UploadPartCommand({
            Bucket: this.bucket,
            Key: key,
            UploadId: uploadId,
            PartNumber: partNumber,
            Body: watched,
            ContentLength: contentLength,
          }),
          {
            abortSignal,
          },
        ),
      signal,
    );
    if (!out.ETag) throw new Error('S3 returned no ETag for the part');
    return out.ETag;
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
  private async streaming<O>(
    body: Readable,
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
    const { stop } = watchedUpload(body, this.timeouts.stallMs, onError);
    try {
      return await send(body, controller.signal);
    } catch (error) {
      throw failure ?? error;
    } finally {
      signal?.removeEventListener('abort', onAbort);
      stop();
    }
  }

  async completeMultipartUpload(
    key: string,
    uploadId: string,
    parts: { partNumber: number; etag: string }[],
    signal?: AbortSignal,
  ): Promise<void> {
    await this.s3.send(
      new CompleteMultipartUploadCommand({
        Bucket: this.bucket,
        Key: key,
        UploadId: uploadId,
        MultipartUpload: { Parts: parts.map((p) => ({ PartNumber: p.partNumber, ETag: p.etag })) },
      }),
      { abortSignal: signal },
    );
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
      const page = await this.bounded(
        (abortSignal) =>
          this.s3.send(
            new ListPartsCommand({ Bucket: this.bucket, Key: key, UploadId: uploadId, PartNumberMarker: marker }),
            { abortSignal },
          ),
        signal,
      );
      for (const p of page.Parts ?? []) parts.set(p.PartNumber!, { etag: unquote(p.ETag ?? ''), size: p.Size ?? -1 });
      marker = page.IsTruncated ? page.NextPartNumberMarker : undefined;
    } while (marker);
    return parts;
  }

  async abortMultipartUpload(key: string, uploadId: string): Promise<void> {
    await orNull(
      this.bounded((abortSignal) =>
        this.s3.send(new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: key, UploadId: uploadId }), {
          abortSignal,
        }),
      ),
    );
  }

  /** What S3 says of an object, or null when it does not exist. */
  async head(key: string): Promise<ObjectInfo | null> {
    const res = await orNull(this.read({ method: 'HEAD', key }));
    res?.resume();
    return res && infoOf(res, Number(res.headers['content-length'] ?? 0));
  }

  /**
   * Streams an object, or the bytes S3 serves for `range` (an RFC 9110 `bytes=` range, clipped by
   * S3 to the object); null when the object does not exist. S3's refusal of the range (416) is thrown.
   */
  async get(key: string, range: string | undefined, signal?: AbortSignal): Promise<ServedObject | null> {
    const res = await orNull(this.read({ method: 'GET', key, headers: range ? { range } : {} }, signal));
    if (!res) return null;
    const length = Number(res.headers['content-length'] ?? 0);
    const served = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(res.headers['content-range'] ?? '');
    const body = watchedDownload(res, this.timeouts.stallMs);
    return {
      info: infoOf(res, served ? Number(served[3]) : length),
      body,
      contentLength: length,
      start: served ? Number(served[1]) : 0,
      ranged: !!served,
    };
  }

  /** Streams bytes [start, end] (inclusive) of an object. */
  async getRange(key: string, start: number, end: number, signal?: AbortSignal): Promise<StoredObject> {
    const got = await this.get(key, `bytes=${start}-${end}`, signal);
    if (!got) throw new S3Refusal(404); // gone between the caller's look and this read
    return got;
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
    await this.bounded((abortSignal) =>
      this.s3.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key }), { abortSignal }),
    );
  }

  /** Deletes objects, up to 1,000 per request. Keys that do not exist are not an error. */
  async deleteMany(keys: string[]): Promise<void> {
    for (let i = 0; i < keys.length; i += 1000) {
      const batch = keys.slice(i, i + 1000);
      if (batch.length === 1) {
        await this.delete(batch[0]!);
        continue;
      }
      const out = await this.bounded((abortSignal) =>
        this.s3.send(
          new DeleteObjectsCommand({
            Bucket: this.bucket,
            Delete: { Objects: batch.map((Key) => ({ Key })), Quiet: true },
          }),
          { abortSignal },
        ),
      );
      const failed = (out.Errors ?? []).filter((e) => e.Code !== 'NoSuchKey');
      if (failed.length > 0)
        throw new Error(
          `S3 could not delete ${failed.length} objects, first ${failed[0]!.Key}: ${failed[0]!.Code} ${failed[0]!.Message ?? ''}`,
        );
    }
  }

  /** Deletes every object under a prefix (staged pieces of one content). */
  async deletePrefix(prefix: string): Promise<number> {
    let deleted = 0;
    let token: string | undefined;
    do {
      const page = await this.bounded((abortSignal) =>
        this.s3.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, ContinuationToken: token }), {
          abortSignal,
        }),
      );
      const keys = (page.Contents ?? []).flatMap((object) => (object.Key ? [object.Key] : []));
      await this.deleteMany(keys);
      deleted += keys.length;
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return deleted;
  }
}
