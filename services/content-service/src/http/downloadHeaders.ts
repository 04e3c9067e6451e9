import type { Response } from 'express';

/**
 * A download is a file, never a page: browsers must not sniff it into HTML, run it with the API's
 * origin, or render it inline (stored contents are whatever a client uploaded).
 */
export function setDownloadSafetyHeaders(res: Response): void {
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Content-Security-Policy', 'sandbox');
  res.setHeader('Content-Disposition', 'attachment');
}
