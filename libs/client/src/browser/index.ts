// The client library's browser bundle (`@cp/client/browser`, dist/browser/content-client.js): the
// upload and download of ContentClient for web pages, with no Node.js built-in in it.
export {
  BrowserContentClient,
  type BrowserClientOptions,
  type BrowserContentStatus,
  type BrowserDownload,
  type BrowserUploadOptions,
} from './BrowserContentClient';
export { ApiError, ContentStateError, IntegrityError, TransportError } from '../errors';
export { missingParts, splitIntoParts, type ByteRange } from '../ranges';
