/** A Range or Content-Range header that cannot be understood; the service answers 400. */
export class RangeSyntaxError extends Error {
  override readonly name = 'RangeSyntaxError';
  readonly code = 'CP_ERR_RANGE_SYNTAX';
}
