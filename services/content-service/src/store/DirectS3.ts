import { createHash, createHmac, type BinaryLike, type Hash, type Hmac } from 'node:crypto';
import { Agent as HttpAgent, request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { Readable } from 'node:stream';
import { crc32 } from 'node:zlib';
import type { S3Client } from '@aws-sdk/client-s3';
import { crc64nvme } from '@cp/protocol';
import { SignatureV4 } from '@smithy/signature-v4';
import { inS3Span } from '@cp/tracing';

/** S3's answer when it is not a success: its status and error code. */
export class S3Refusal extends Error {
  override readonly name = 'S3Refusal';
  readonly code = 'CP_ERR_S3_REFUSAL';
  constructor(
    readonly status: number,
    /** S3's error code, when its answer had a body that named one. */
    readonly s3Code = '',
  ) {
    super(`S3 answered ${status}${s3Code ? ` ${s3Code}` : ''}`);
  }
}

export interface DirectCall {
  method: 'GET' | 'HEAD' | 'PUT';
  key: string;
  headers?: Record<string, string>;
  /** Query parameters (UploadPart's `partNumber` and `uploadId`). */
  query?: Record<string, string>;
  /** The request body (PUT), of exactly the Content-Length given in `headers`. */
  body?: Readable;
  /**
   * Send the body's checksum, taken as it streams, in a trailer that S3 checks (aws-chunked, one
   * chunk): a write that carries no checksum of the client's still carries one.
   */
  trailer?: TrailingChecksum;
}

/**
 * The S3 calls on the path of every request (HeadObject, GetObject, PutObject, UploadPart), signed with
 * the SDK's own signer and sent without the SDK's middleware stack, which cost four times the CPU
 * of the call itself (a 10 KiB GetObject: 0.47 CPU-ms through the SDK, 0.12 this way). Endpoint,
 * path style, region and credentials (their provider: the default chain's refresh included) are
 * the SDK client's; everything else still goes through the SDK.
 */
export class DirectS3 {
  private target: Promise<Target> | null = null;
  private readonly agents = {
    http: new HttpAgent({ keepAlive: true, maxSockets: 256 }),
    https: new HttpsAgent({ keepAlive: true, maxSockets: 256 }),
  };

  constructor(
    private readonly s3: S3Client,
    private readonly bucket: string,
  ) {}

  /**
   * Resolves with S3's response once its headers came. An answer of 300 or more is thrown as an
   * S3Refusal (its body read for the error code); `signal` aborts the call.
   */
  send(call: DirectCall, signal: AbortSignal): Promise<IncomingMessage> {
    // A span until S3's answer head (the body of a GET streams after it), when tracing.
    const operation =
      call.method === 'PUT'
        ? call.query?.partNumber
          ? 'UploadPart'
          : 'PutObject'
        : `${call.method === 'GET' ? 'Get' : 'Head'}Object`;
    const length = Number(call.headers?.['content-length']);
    return inS3Span(
      operation,
      {
        bucket: this.bucket,
        key: call.key,
        partNumber: call.query?.partNumber ? Number(call.query.partNumber) : undefined,
        bytes: call.body && Number.isFinite(length) ? length : undefined,
        range: call.headers?.range,
      },
      () => this.sendUntraced(call, signal),
    );
  }

  private async sendUntraced(call: DirectCall, signal: AbortSignal): Promise<IncomingMessage> {
    this.target ??= resolveTarget(this.s3, this.bucket).catch((error: unknown) => {
      this.target = null;
      throw error;
    });
    const t = await this.target;
    const path = t.prefix + call.key.split('/').map(encodeURIComponent).join('/');
    const query = call.query ?? {};
    const framing =
      call.trailer && call.body ? await trailerFraming(Number(call.headers?.['content-length']), call.trailer) : null;
    const headers = { host: t.host, 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD', ...call.headers, ...framing?.headers };
    const signed = await t.signer.sign({
      method: call.method,
      protocol: t.protocol,
      hostname: t.hostname,
      port: t.port,
      path,
      headers,
      query,
    });
    const search = new URLSearchParams(query).toString();
    const send = t.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise<IncomingMessage>((resolve, reject) => {
      const agent = t.protocol === 'https:' ? this.agents.https : this.agents.http;
      const req = send(
        {
          agent,
          method: call.method,
          hostname: t.hostname,
          port: t.port,
          path: search ? `${path}?${search}` : path,
          headers: signed.headers,
          signal,
        },
        (res) => {
          const status = res.statusCode ?? 500;
          if (status < 300) return resolve(res);
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (text = text.length < 4096 ? text + chunk : text));
          res.on('end', () => reject(new S3Refusal(status, /<Code>([^<]*)<\/Code>/.exec(text)?.[1] ?? '')));
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      if (framing?.send && call.body) framing.send(call.body, req);
      else if (call.body) call.body.pipe(req);
      else req.end();
    });
  }

  destroy(): void {
    this.agents.http.destroy();
    this.agents.https.destroy();
  }
}

/** A checksum the service takes of a body as it streams, sent in a trailer. */
export type TrailingChecksum = 'crc32' | 'crc64nvme';

/**
 * A body of `length` bytes as one aws-chunked chunk with its checksum in a trailer
 * (STREAMING-UNSIGNED-PAYLOAD-TRAILER): the bytes pass untouched, the checksum is taken as they pass.
 */
async function trailerFraming(
  length: number,
  algorithm: TrailingChecksum,
): Promise<{ headers: Record<string, string>; send: ((body: Readable, req: ClientRequest) => void) | null }> {
  const name = `x-amz-checksum-${algorithm}`;
  // An empty body has no chunk to frame; its checksum (0, for both) goes as a header.
  if (length === 0)
    return { headers: { [name]: Buffer.alloc(algorithm === 'crc32' ? 4 : 8).toString('base64') }, send: null };
  const head = Buffer.from(`${length.toString(16)}\r\n`);
  const tail = (value: Buffer) => Buffer.from(`\r\n0\r\n${name}:${value.toString('base64')}\r\n\r\n`);
  const size = algorithm === 'crc32' ? 4 : 8;
  const sum = await checksummer(algorithm);
  return {
    headers: {
      'x-amz-content-sha256': 'STREAMING-UNSIGNED-PAYLOAD-TRAILER',
      'content-encoding': 'aws-chunked',
      'x-amz-decoded-content-length': String(length),
      'x-amz-trailer': name,
      'content-length': String(head.length + length + tail(Buffer.alloc(size)).length),
    },
    send(body: Readable, req: ClientRequest) {
      req.write(head);
      body.on('data', (chunk: Buffer) => sum.update(chunk));
      body.once('end', () => req.end(tail(sum.digest())));
      body.pipe(req, { end: false });
    },
  };
}

/** CRC-32 by zlib (native); CRC-64/NVME in WebAssembly. */
async function checksummer(algorithm: TrailingChecksum): Promise<{ update(chunk: Buffer): void; digest(): Buffer }> {
  if (algorithm === 'crc64nvme') return crc64nvme();
  let crc = 0;
  return {
    update: (chunk) => (crc = crc32(chunk, crc)),
    digest: () => {
      const value = Buffer.alloc(4);
      value.writeUInt32BE(crc);
      return value;
    },
  };
}

export interface Target {
  protocol: 'http:' | 'https:';
  hostname: string;
  port: number | undefined;
  /** The Host header (with the port when it is not the protocol's). */
  host: string;
  /** The path before the key: `/<bucket>/` in path style, `/` with the bucket in the host. */
  prefix: string;
  signer: SignatureV4;
}

/** Where the SDK client sends a bucket's requests: its endpoint (or AWS's regional one) and its path style. */
export async function resolveTarget(s3: S3Client, bucket: string): Promise<Target> {
  const region = await s3.config.region();
  const endpoint = s3.config.endpoint ? await s3.config.endpoint() : null;
  const protocol = endpoint?.protocol === 'http:' ? 'http:' : 'https:';
  const base = endpoint?.hostname ?? `s3.${region}.amazonaws.com`;
  const port = endpoint?.port;
  const basePath = (endpoint?.path ?? '/').replace(/\/$/, '');
  // As the SDK: the bucket in the host where DNS (and TLS) allow it.
  const pathStyle = s3.config.forcePathStyle === true || !/^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$/.test(bucket);
  const hostname = pathStyle ? base : `${bucket}.${base}`;
  const signer = new SignatureV4({
    credentials: s3.config.credentials,
    region,
    service: 's3',
    sha256: Sha256,
    uriEscapePath: false,
    applyChecksum: false,
  });
  return {
    protocol,
    hostname,
    port,
    host: port ? `${hostname}:${port}` : hostname,
    prefix: pathStyle ? `${basePath}/${bucket}/` : `${basePath}/`,
    signer,
  };
}

/** SHA-256 and HMAC-SHA256 as the signer asks for them. */
class Sha256 {
  private hash: Hash | Hmac;
  private readonly secret?: BinaryLike;
  constructor(secret?: string | ArrayBuffer | ArrayBufferView) {
    this.secret = secret === undefined ? undefined : binary(secret);
    this.hash = this.secret === undefined ? createHash('sha256') : createHmac('sha256', this.secret);
  }
  update(data: string | ArrayBuffer | ArrayBufferView): void {
    this.hash.update(binary(data));
  }
  async digest(): Promise<Uint8Array> {
    return new Uint8Array(this.hash.digest());
  }
  reset(): void {
    this.hash = this.secret === undefined ? createHash('sha256') : createHmac('sha256', this.secret);
  }
}

function binary(data: string | ArrayBuffer | ArrayBufferView): BinaryLike {
  if (typeof data === 'string') return data;
  return ArrayBuffer.isView(data)
    ? new Uint8Array(data.buffer, data.byteOffset, data.byteLength)
    : new Uint8Array(data);
}
