export { tracingOptions, type SamplerName, type TracingOptions, type TracingSettings } from './TracingOptions';
export { startTracing, type Tracing } from './startTracing';
export {
  contextOf,
  currentTraceparent,
  endIncomingRequest,
  endOutgoingCall,
  failSpan,
  inChildSpan,
  inSpan,
  isTracing,
  runInContext,
  setTracing,
  startIncomingRequest,
  startOutgoingCall,
  traceLogFields,
  type IncomingRequest,
  type OutgoingCall,
} from './spans';
export { sanitizeAttribute, sanitizeText, SanitizingSpanProcessor } from './SanitizingSpanProcessor';
export { inS3Span, traceS3, type MiddlewareStackClient, type S3Call } from './s3Spans';
export { traceMongo, type CommandMonitoredClient } from './mongoSpans';
