import type { S3Client } from '@aws-sdk/client-s3';
import { resolveTarget, type Target } from './DirectS3';

/** A request a client sends straight to S3: where, how, and with which headers (signed: they must be sent as given). */
export interface PresignedRequest {
  method: 'PUT' | 'GET';
  url: string;
  /** Headers the signature covers besides Host: the client sends exactly these. */
  headers: Record<string, string>;
  expiresAt: Date;
}

/**
 * Presigned S3 requests (SigV4 query signing, the signer the service's own S3 calls use) for
 * clients that transfer bytes straight to S3: an UploadPart bound to one part of one upload, its
 * exact length and (when given) its SHA-256, and a GetObject bound to one object and (when given)
 * its Range. `s3` is a client for the address clients reach S3 at (DIRECT_S3_ENDPOINT), which may
 * differ from the service's own; only its endpoint, region and credentials are used.
 */
export class Presigner {
  private target: Promise<Target> | null = null;

  constructor(
    private readonly s3: S3Client,
    private readonly bucket: string,
    /** How long a URL is valid. */
    readonly lifetimeSeconds: number,
    private readonly clock: () => Date = () => new Date(),
  ) {}

  /** UploadPart of part `partNumber` of upload `uploadId`, exactly `length` bytes (and that SHA-256, when given). */
  uploadPart(
    key: string,
    uploadId: string,
    partNumber: number,
    length: number,
    sha256?: Buffer,
  ): Promise<PresignedRequest> {
    const headers: Record<string, string> = { 'content-length': String(length) };
    if (sha256) headers['x-amz-checksum-sha256'] = sha256.toString('base64');
    return this.presign('PUT', key, { partNumber: String(partNumber), uploadId }, headers);
  }

  /** GetObject of `key`; with `range` (an RFC 9110 `bytes=` value), only for requests that send that very Range. */
  getObject(key: string, range?: string): Promise<PresignedRequest> {
    return this.presign('GET', key, {}, range ? { range } : {});
  }

  private async presign(
    method: 'PUT' | 'GET',
    key: string,
    query: Record<string, string>,
    headers: Record<string, string>,
  ): Promise<PresignedRequest> {
    this.target ??= resolveTarget(this.s3, this.bucket).catch((error: unknown) => {
      this.target = null;
      throw error;
    });
    const t = await this.target;
    const path = t.prefix + key.split('/').map(encodeURIComponent).join('/');
    const now = this.clock();
    const signed = await t.signer.presign(
      {
        method,
        protocol: t.protocol,
        hostname: t.hostname,
        port: t.port,
        path,
        query,
        headers: { host: t.host, 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD', ...headers },
      },
      {
        expiresIn: this.lifetimeSeconds,
        signingDate: now,
        // Sent by the client as headers (signed), not moved into the URL: S3 checks the checksum header.
        unhoistableHeaders: new Set(Object.keys(headers)),
      },
    );
    const search = Object.entries(signed.query ?? {})
      .map(([name, value]) => `${rfc3986(name)}=${rfc3986(String(value))}`)
      .join('&');
    return {
      method,
      url: `${t.protocol}//${t.host}${path}?${search}`,
      headers,
      expiresAt: new Date(now.getTime() + this.lifetimeSeconds * 1000),
    };
  }
}

/** Percent-encoding as SigV4 canonicalises a query (RFC 3986 unreserved characters kept). */
function rfc3986(value: string): string {
  return encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}
