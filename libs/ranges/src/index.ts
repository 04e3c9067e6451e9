export { parseContentRange, type ContentRange } from './contentRange';
export { parseRange, resolveRange, type RangeRequest, type ResolvedRange } from './range';
export { RangeSyntaxError } from './RangeSyntaxError';
