import { ServiceError } from '@cp/errors';
import { systemClock, type Clock } from '@cp/service-kit';
import type { DownloadService } from '../downloads/DownloadService';
import type { ObjectInfo } from '../store/ObjectStore';
import type { ReceiptSigner } from './ReceiptSigner';

/** What a receipt attests, in the API's kebab-case (openapi.yaml `ContentReceipt`). */
export interface ReceiptDocument {
  'content-id': string;
  'owner-id': string;
  size: number;
  'content-type': string;
  /** Base64 of each whole-content digest S3 keeps for the object. */
  digests: { 'sha-256'?: string; crc64nvme?: string };
  /** When the content was started (its first request), ISO 8601; null where the object does not say. */
  'created-at': string | null;
  /** When it was completed: its object's Last-Modified. */
  'completed-at': string | null;
  /** Who sent it: `bearer:<sub>` or `session:<user>`. */
  uploader: string | null;
  /** The SHA-1 thumbprint (hex) of the certificate the uploader's session signed in with. */
  'uploader-certificate': string | null;
  /** When the receipt was signed, also its signing-time attribute (whole seconds). */
  issued: string;
}

/**
 * Receipts of ready contents: the content's object as one HeadObject finds it, written as a JSON
 * document and signed with the platform's key (one signature). Without a signer every receipt
 * answers 501 `receiptsNotConfigured`.
 */
export class ContentReceipts {
  constructor(
    private readonly downloads: DownloadService,
    private readonly signer: ReceiptSigner | null,
    private readonly clock: Clock = systemClock,
  ) {}

  /** The DER CMS SignedData of the content's receipt. */
  async issue(ownerId: string, contentId: string): Promise<Buffer> {
    if (!this.signer) throw ServiceError.of('receiptsNotConfigured');
    const info = await this.downloads.ready(ownerId, contentId);
    // CMS signing-time has whole seconds: the document says the same instant.
    const issued = new Date(Math.floor(this.clock().getTime() / 1000) * 1000);
    const document = receiptDocument(ownerId, contentId, info, issued);
    return this.signer.sign(Buffer.from(JSON.stringify(document), 'utf8'), issued);
  }
}

/** What a ready content's object says of it, in the API's words: a receipt's document, a listing's item. */
export type ObjectFacts = Omit<ReceiptDocument, 'content-id' | 'owner-id' | 'issued'>;

/** The facts S3 keeps with a content's object (as `info` describes it): size, type, digests, times, uploader. */
export function objectFacts(info: ObjectInfo): ObjectFacts {
  const digests: ReceiptDocument['digests'] = {};
  if (info.digests['sha-256']) digests['sha-256'] = info.digests['sha-256'].toString('base64');
  if (info.digests.crc64nvme) digests.crc64nvme = info.digests.crc64nvme.toString('base64');
  const created = new Date(info.metadata['created-at'] ?? '');
  return {
    size: info.contentLength,
    'content-type': info.contentType,
    digests,
    'created-at': Number.isNaN(created.getTime()) ? null : created.toISOString(),
    'completed-at':
      info.lastModified && !Number.isNaN(info.lastModified.getTime()) ? info.lastModified.toISOString() : null,
    uploader: uploaderOf(info.metadata.uploader),
    'uploader-certificate': uploaderOf(info.metadata['uploader-certificate']),
  };
}

/** The receipt's document for the content whose object S3 describes as `info`. */
export function receiptDocument(ownerId: string, contentId: string, info: ObjectInfo, issued: Date): ReceiptDocument {
  return { 'content-id': contentId, 'owner-id': ownerId, ...objectFacts(info), issued: issued.toISOString() };
}

/** The uploader as kept in the object's metadata (URI-encoded, see ContentCreation). */
function uploaderOf(stored: string | undefined): string | null {
  if (stored === undefined) return null;
  try {
    return decodeURIComponent(stored);
  } catch {
    return stored;
  }
}
