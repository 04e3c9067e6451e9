export { ContentClient, PART_SIZE, type ContentClientOptions, type ContentStatus, type Credentials, type DownloadOptions, type Progress, type SessionPair, type UploadOptions } from './ContentClient';
export { ApiError, TransportError } from './errors';
export { decryptEncryptedKey } from './EncryptedKey';
export { parseReceivedRanges, missingParts, splitIntoParts, type ByteRange } from './ranges';
