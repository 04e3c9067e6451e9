import type { Readable } from 'node:stream';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  ListObjectsV2Command,
  ListPartsCommand,
  HeadBucketCommand,
  S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { headerKey, HEADERS, parseContentRange, type ContentRange } from '@cp/protocol';
import { isS3Unavailable, orNull, unquote } from './s3Errors';
import type { IncomingMessage } from 'node:http';
import { ensureBucket, setAbortIncompleteUploadsRule } from './bucketSetup';
import { DirectS3, S3Refusal, type DirectCall } from './DirectS3';
import {
  CHECKSUM_MODE,
  infoOf,
  metaHeaders,
  type ObjectInfo,
  type ObjectStoreTimeouts,
  type ServedObject,
  type StoredObject,
} from './ObjectInfo';
import { StorageTimeout, streamInto, watchedDownload, withDeadline } from './S3Progress';

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

  /** Creates the bucket when it does not exist (see bucketSetup). */
  ensureBucket(): Promise<void> {
    return ensureBucket(
      this.s3,
      this.bucket,
      (send) => this.bounded(send),
      () => this.ping(),
    );
  }

  /** The backstop for uploads the sweeper never saw; false where the server refuses it (see bucketSetup). */
  setAbortIncompleteUploadsRule(days: number): Promise<boolean> {
    return setAbortIncompleteUploadsRule(this.s3, this.bucket, days, (send) => this.bounded(send));
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
  ): Promise<string> {
    const input = { ...this.at(key), UploadId: uploadId, PartNumber: partNumber, ContentLength: contentLength };
    const send = (Body: Readable, abortSignal: AbortSignal) =>
      this.s3.send(new UploadPartCommand({ ...input, Body }), { abortSignal });
    const out = await this.streaming(body, send, signal);
    if (!out.ETag) throw new Error('S3 returned no ETag for the part');
    return out.ETag;
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
    await this.bounded((abortSignal) => this.s3.send(new DeleteObjectCommand(this.at(key)), { abortSignal }));
  }

  /** Deletes objects, up to 1,000 per request. Keys that do not exist are not an error. */
  async deleteMany(keys: string[]): Promise<void> {
    for (let i = 0; i < keys.length; i += 1000) {
      const batch = keys.slice(i, i + 1000);
      if (batch.length === 1) {
        await this.delete(batch[0]!);
        continue;
      }
      const Delete = { Objects: batch.map((Key) => ({ Key })), Quiet: true };
      const command = new DeleteObjectsCommand({ Bucket: this.bucket, Delete });
      const out = await this.bounded((abortSignal) => this.s3.send(command, { abortSignal }));
      const failed = (out.Errors ?? []).filter((e) => e.Code !== 'NoSuchKey');
      const first = failed[0];
      if (first)
        throw new Error(
          `S3 could not delete ${failed.length} objects, first ${first.Key}: ${first.Code} ${first.Message ?? ''}`,
        );
    }
  }

  /** Deletes every object under a prefix (staged pieces of one content). */
  async deletePrefix(prefix: string): Promise<number> {
    let deleted = 0;
    let token: string | undefined;
    do {
      const command = new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, ContinuationToken: token });
      const page = await this.bounded((abortSignal) => this.s3.send(command, { abortSignal }));
      const keys = (page.Contents ?? []).flatMap((object) => (object.Key ? [object.Key] : []));
      await this.deleteMany(keys);
      deleted += keys.length;
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return deleted;
  }
}

/** The range S3 says it served (its Content-Range); null when it served the whole object. */
function servedRange(header: string | undefined): ContentRange | null {
  try {
    return header ? parseContentRange(header) : null;
  } catch {
    return null;
  }
}
