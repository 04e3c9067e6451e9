export { ContentClient, PART_SIZE, fixedSizeParts, type ContentClientOptions, type ContentStatus, type Credentials, type DownloadOptions, type Progress, type SessionPair, type StreamUploadOptions, type UploadOptions } from './ContentClient';
export { ApiError, CredentialsFileError, IntegrityError, TransportError } from './errors';
export { checkKeyPair, decryptEncryptedKey } from './EncryptedKey';
export { parseReceivedRanges, missingParts, splitIntoParts, type ByteRange } from './ranges';
