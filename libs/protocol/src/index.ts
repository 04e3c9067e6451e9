// The content API's protocol facts, each defined here only: the gateway, the content-service and
// the client (which compiles this package into its own dist, see libs/client/package.json
// "imports") take them from here. test/oneHome.test.ts fails when a second definition appears.
export { PART_SIZE, MAX_CONTENT_SIZE, MAX_RANGES_PER_PART } from './limits';
export { HEADERS, headerKey } from './headers';
export { parseContentRange, formatContentRange, type ContentRange } from './contentRange';
export { parseRange, resolveRange, formatRange, inS3Spelling, type RangeRequest, type ResolvedRange } from './range';
export { RangeSyntaxError } from './RangeSyntaxError';
export { formatReceivedRanges, parseReceivedRanges, type ReceivedRange } from './receivedRanges';
export {
  DIGEST_ALGORITHMS,
  DigestSyntaxError,
  formatDigest,
  parseContentDigest,
  type DigestAlgorithm,
} from './contentDigest';
export { WEBHOOK_HEADERS, signWebhook, verifyWebhookSignature, type WebhookHeaders } from './webhookSignature';
export { crc64nvme, type Crc64Nvme } from './crc64nvme';
