// The former name of @cp/protocol, which is the home of these definitions: this package defines
// nothing and goes once the content-service imports @cp/protocol.
export {
  parseContentRange,
  parseRange,
  resolveRange,
  RangeSyntaxError,
  type ContentRange,
  type RangeRequest,
  type ResolvedRange,
} from '@cp/protocol';
