import { ServiceError } from '@cp/errors';

/** The tus protocol version this door speaks (the only one there is). */
export const TUS_VERSION = '1.0.0';

/** The extensions offered (Tus-Extension). */
export const TUS_EXTENSIONS = [
  'creation',
  'creation-with-upload',
  'creation-defer-length',
  'termination',
  'expiration',
  'checksum',
  'concatenation',
] as const;

/** Upload-Checksum algorithms, as tus names them, with Node's name for each. */
export const TUS_CHECKSUMS: Readonly<Record<string, string>> = {
  sha1: 'sha1',
  sha256: 'sha256',
  sha512: 'sha512',
  md5: 'md5',
};

/** The media type of a PATCH body (and of a creation's body). */
export const OFFSET_OCTET_STREAM = 'application/offset+octet-stream';

/** The longest Upload-Metadata kept (it travels with the content as S3 user metadata, 2 KiB in all). */
export const MAX_METADATA_LENGTH = 1024;

/** A non-negative whole number of bytes (at most 16 digits: more is never a length here). */
const WHOLE = /^(0|[1-9][0-9]{0,15})$/;

/** A header of a whole number of bytes: its value; NaN when absent, -1 when it is anything else. */
function wholeHeader(value: string | string[] | undefined): number {
  if (value === undefined) return Number.NaN;
  return typeof value === 'string' && WHOLE.test(value.trim()) ? Number(value.trim()) : -1;
}

/** Upload-Length: null when absent (400 when malformed). */
export function uploadLengthOf(value: string | string[] | undefined): number | null {
  const length = wholeHeader(value);
  if (Number.isNaN(length)) return null;
  if (length < 0) throw ServiceError.of('invalidUploadLength', `Upload-Length must be a whole number of bytes`);
  return length;
}

/** Upload-Offset, which a PATCH must send (400 when absent or malformed). */
export function uploadOffsetOf(value: string | string[] | undefined): number {
  const offset = wholeHeader(value);
  if (Number.isNaN(offset)) throw ServiceError.of('invalidUploadOffset', 'a PATCH needs Upload-Offset');
  if (offset < 0) throw ServiceError.of('invalidUploadOffset', `Upload-Offset must be a whole number of bytes`);
  return offset;
}

/** An upload's metadata: keys (ASCII, no space or comma) with base64 values, as sent. */
export interface UploadMetadata {
  /** The header as it came, given back on HEAD. */
  raw: string;
  values: Map<string, Buffer | null>;
}

/** Upload-Metadata: `key base64, key, ...`; null when absent. */
export function parseMetadata(value: string | string[] | undefined): UploadMetadata | null {
  if (value === undefined) return null;
  const refuse = (why: string) => ServiceError.of('invalidUploadMetadata', `Upload-Metadata ${why}`);
  if (typeof value !== 'string') throw refuse('may be sent once');
  if (value.length > MAX_METADATA_LENGTH) throw refuse(`is longer than ${MAX_METADATA_LENGTH} bytes`);
  if (!/^[\x20-\x7e]*$/.test(value)) throw refuse('holds a byte outside visible ASCII');
  const values = new Map<string, Buffer | null>();
  if (value.trim() === '') return { raw: '', values };
  for (const pair of value.split(',')) {
    const [key, encoded, ...rest] = pair.trim().split(' ');
    if (!key || rest.length > 0)
      throw refuse(`has a pair that is not "key" or "key base64": ${JSON.stringify(pair.trim())}`);
    if (values.has(key)) throw refuse(`names the key ${JSON.stringify(key)} twice`);
    if (encoded !== undefined && !/^[A-Za-z0-9+/]*={0,2}$/.test(encoded))
      throw refuse(`has a value of ${JSON.stringify(key)} that is not base64`);
    values.set(key, encoded === undefined ? null : Buffer.from(encoded, 'base64'));
  }
  return { raw: value.trim(), values };
}

/** Upload-Checksum: the algorithm (Node's name) and the digest; null when absent. */
export function parseChecksum(value: string | string[] | undefined): { algorithm: string; digest: Buffer } | null {
  if (value === undefined) return null;
  const m = typeof value === 'string' ? /^([a-z0-9-]+) ([A-Za-z0-9+/]+={0,2})$/.exec(value.trim()) : null;
  const algorithm = m ? TUS_CHECKSUMS[m[1]!] : undefined;
  if (!m || !algorithm)
    throw ServiceError.of(
      'invalidUploadChecksum',
      `Upload-Checksum must be "<algorithm> <base64 digest>" with one of ${Object.keys(TUS_CHECKSUMS).join(', ')}`,
    );
  return { algorithm, digest: Buffer.from(m[2]!, 'base64') };
}

/** Whether a Content-Type header names application/offset+octet-stream (parameters allowed). */
export function isOffsetOctetStream(value: string | undefined): boolean {
  return value !== undefined && value.split(';')[0]!.trim().toLowerCase() === OFFSET_OCTET_STREAM;
}

/** Upload-Concat: `partial`, or `final;` and the URLs (absolute, or paths) of this owner's partial uploads. */
export type UploadConcat = { kind: 'partial' } | { kind: 'final'; ids: string[] };

/** Upload-Concat of a creation: null when absent (400 when malformed, or naming another owner's uploads). */
export function parseConcat(value: string | string[] | undefined, ownerId: string, max: number): UploadConcat | null {
  if (value === undefined) return null;
  const refuse = (why: string) => ServiceError.of('invalidUploadConcat', `Upload-Concat ${why}`);
  if (typeof value !== 'string') throw refuse('may be sent once');
  const text = value.trim();
  if (text === 'partial') return { kind: 'partial' };
  if (!text.startsWith('final;')) throw refuse('must be "partial" or "final;<url> <url> ..."');
  const urls = text.slice(6).trim().split(/ +/).filter(Boolean);
  if (urls.length === 0 || urls.length > max) throw refuse(`must name 1 to ${max} partial uploads`);
  const ids = urls.map((url) => {
    let path: string;
    try {
      path = new URL(url, 'http://upload.invalid').pathname;
    } catch {
      throw refuse(`names ${JSON.stringify(url)}, which is not a URL`);
    }
    const m = /^\/v1\/([^/]+)\/tus\/([0-9a-fA-F-]{36})$/.exec(path);
    if (!m || m[1]!.toLowerCase() !== ownerId)
      throw refuse(`names ${JSON.stringify(url)}, which is no tus upload of this owner`);
    return m[2]!.toLowerCase();
  });
  if (new Set(ids).size !== ids.length) throw refuse('names a partial upload twice');
  return { kind: 'final', ids };
}
