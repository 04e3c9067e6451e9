import type { Readable } from 'node:stream';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  ListPartsCommand,
  HeadBucketCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { headerKey, HEADERS } from '@cp/protocol';
import { isS3Unavailable, orNull, unquote } from './s3Errors';
import type { IncomingMessage } from 'node:http';
import { ensureBucket, setAbortIncompleteUploadsRule } from './bucketSetup';
import { probeChecksumChecks } from './checksumProbe';
import { DirectS3, S3Refusal, type DirectCall } from './DirectS3';
import { deleteMany, deletePrefix, listKeys, type KeyPage } from './keyListing';
import { type BodyChecksum, ChecksumRefused, writeChecksum } from './writeChecksums';
import {
  CHECKSUM_MODE,
  infoOf,
  metaHeaders,
  servedRange,
  type ObjectInfo,
  type ObjectStoreTimeouts,
  type ServedObject,
  type StoredObject,
} from './ObjectInfo';
import { StorageTimeout, streamInto, watchedDownload, withDeadline } from './S3Progress';

export { isNotFound, isNoSuchUpload, isRangeRefused, isS3Unavailable, unquote } from './s3Errors';
export { StorageTimeout } from './S3Progress';
export { ChecksumRefused } from './writeChecksums';
export type { BodyChecksum } from './writeChecksums';
export type { ObjectInfo, ObjectStoreTimeouts, ServedObject, StoredObject } from './ObjectInfo';

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
