// The content API's protocol facts, each defined here only: the gateway, the content-service and
// the client take them from here.
export { PART_SIZE, MAX_CONTENT_SIZE } from './limits';
export { HEADERS, headerKey } from './headers';
export { parseContentRange, formatContentRange, type ContentRange } from './contentRange';
export { parseRange, resolveRange, formatRange, type RangeRequest, type ResolvedRange } from './range';
export { RangeSyntaxError } from './RangeSyntaxError';
