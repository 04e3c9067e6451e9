export { ContentClient, PART_SIZE, spooledParts, type ContentClientOptions, type ContentStatus, type Credentials, type DownloadOptions, type Progress, type SessionPair, type SpooledPart, type StreamUploadOptions, type UploadOptions } from './ContentClient';
export { ApiError, CredentialsFileError, IntegrityError, TransportError } from './errors';
export { checkKeyPair, decryptEncryptedKey } from './EncryptedKey';
export { parseReceivedRanges, missingParts, splitIntoParts, type ByteRange } from './ranges';
