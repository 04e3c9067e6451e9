import type { Response } from 'express';
import { ServiceError } from '@cp/errors';
import type { RangeRequest } from '@cp/ranges';

/**
 * A download is a file, never a page: browsers must not sniff it into HTML, run it with the API's
 * origin, or render it inline (stored contents are whatever a client uploaded).
 */
export function setDownloadSafetyHeaders(res: Response): void {
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Content-Security-Policy', 'sandbox');
  res.setHeader('Content-Disposition', 'attachment');
}

/**
 * The legacy `Range: bytes a-b/total` names the total the client believes in; one that is not the
 * content's means the client has another content in mind: 416 with the real total.
 */
export function legacyTotalMismatch(range: RangeRequest | null, total: number): ServiceError | null {
  if (range?.form !== 'legacy' || range.total === null || range.total === total) return null;
  return ServiceError.of('rangeTotalMismatch', `the range names a total of ${range.total} bytes; the content has ${total}`, {
    headers: { 'Content-Range': `bytes */${total}` },
  });
}
