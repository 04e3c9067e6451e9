export { PART_SIZE, verifyWebhookSignature, WEBHOOK_HEADERS, type WebhookHeaders } from '#protocol';
export { WebhookCalls } from './WebhookCalls';
export {
  ContentClient,
  type ContentClientOptions,
  type ContentStatus,
  type DownloadOptions,
  type Progress,
  type StreamUploadOptions,
  type UploadOptions,
} from './ContentClient';
export { spooledParts, type SpooledPart } from './PartSources';
export { type Credentials, type SessionPair } from './Session';
export {
  ApiError,
  ContentStateError,
  CredentialsFileError,
  IntegrityError,
  NotRefreshableError,
  ReceiptError,
  RetriesExhaustedError,
  TransportError,
  formatDuration,
  parseRetryAfter,
} from './errors';
export {
  DEFAULT_RETRY_FOR_MS,
  RETRY_AFTER_CAP_MS,
  RetryPolicy,
  retryReason,
  type RetryNotice,
  type RetryPolicyOptions,
} from './RetryPolicy';
export { checkKeyPair, decryptEncryptedKey } from './EncryptedKey';
export { verifyReceipt, type ReceiptSigner, type VerifiedReceipt } from './Receipt';
export { parseReceivedRanges, missingParts, splitIntoParts, type ByteRange } from './ranges';
export type {
  CertChallenge,
  CodeError,
  ContentList,
  ContentListItem,
  ContentReceipt,
  ContentsError,
  CreatedWebhook,
  PartStored,
  SessionPairAnswer,
  UploadCreated,
  UploadState,
  Webhook,
  WebhookEventType,
  WebhookList,
} from './api';
export type { components, operations, paths } from './generated/openapi';
