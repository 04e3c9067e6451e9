import {
  context,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Link,
  type Span,
  type Tracer,
} from '@opentelemetry/api';

/** The one tracer of the process; a no-op until `startTracing` registers a provider. */
const TRACER_NAME = 'content-platform';
let active = false;
/** Looked up once per `setTracing`: the provider's lookup builds a key and searches a map (0.2–0.3 % of a traced service's CPU, profiled). */
let cachedTracer: Tracer | undefined;
const tracer = (): Tracer => (cachedTracer ??= trace.getTracer(TRACER_NAME));

/** Whether this process traces (set once by `startTracing`): off, no span is made and no context carried. */
export function isTracing(): boolean {
  return active;
}

/** For `startTracing` and tests. */
export function setTracing(on: boolean): void {
  active = on;
  cachedTracer = undefined;
}

/** Runs `work` in a span that is a child of the active one; without tracing, just runs it. */
export function inSpan<T>(name: string, attributes: Attributes | undefined, work: () => Promise<T>): Promise<T> {
  if (!active) return work(); // no promise of its own: nothing added to the work's
  return tracer().startActiveSpan(name, { attributes }, async (span) => {
    try {
      return await work();
    } catch (error) {
      failSpan(span, error);
      throw error;
    } finally {
      span.end();
    }
  });
}

/** Like `inSpan`, but only under a span already active (a backend call of no request or job is not a trace of its own). */
export function inChildSpan<T>(
  name: string,
  attributes: Attributes,
  kind: SpanKind,
  work: () => Promise<T>,
): Promise<T> {
  if (!active || !trace.getSpan(context.active())) return work();
  return tracer().startActiveSpan(name, { attributes, kind }, async (span) => {
    try {
      return await work();
    } catch (error) {
      failSpan(span, error);
      throw error;
    } finally {
      span.end();
    }
  });
}

/** Marks a span failed, with the error's type and code only (a message may quote what it failed on). */
export function failSpan(span: Span, error: unknown): void {
  const e = error as { name?: unknown; code?: unknown } | undefined;
  span.setStatus({ code: SpanStatusCode.ERROR });
  if (typeof e?.name === 'string') span.setAttribute('error.type', e.name);
  if (typeof e?.code === 'string') span.setAttribute('cp.error.code', e.code);
}

/** A span around a call to another process, and the W3C headers that carry it there. */
export interface OutgoingCall {
  span: Span;
  /** `traceparent` (and `tracestate` when there is one): set these on the outgoing request. */
  headers: Record<string, string>;
  /** Set by `endOutgoingCall`: a call ends once, whichever of its events comes first. */
  ended: boolean;
}

/**
 * A CLIENT span, child of the active context (or of `parent`), and the headers that continue it in
 * the called service; null without tracing.
 */
export function startOutgoingCall(name: string, attributes: Attributes, parent?: Context): OutgoingCall | null {
  if (!active) return null;
  const base = parent ?? context.active();
  const span = tracer().startSpan(name, { kind: SpanKind.CLIENT, attributes }, base);
  const headers: Record<string, string> = {};
  propagation.inject(trace.setSpan(base, span), headers);
  return { span, headers, ended: false };
}

/** Ends an outgoing call's span with the status the other side answered (5xx and none are errors). */
export function endOutgoingCall(call: OutgoingCall | null, status: number | undefined, error?: unknown): void {
  if (!call || call.ended) return;
  call.ended = true;
  if (status !== undefined) call.span.setAttribute('http.response.status_code', status);
  if (error !== undefined) failSpan(call.span, error);
  else if (status === undefined || status >= 500) call.span.setStatus({ code: SpanStatusCode.ERROR });
  call.span.end();
}

/** A request's SERVER span and the context its handling runs in. */
export interface IncomingRequest {
  span: Span;
  context: Context;
}

/**
 * Starts the SERVER span of a request from its headers. `trustIncoming`: a W3C `traceparent`
 * (and `tracestate`) from the caller is the parent; otherwise the request starts a new trace,
 * linked to the caller's context when it sent one (a client cannot join or steer a trace, nor
 * force its sampling, but the link still leads to it).
 */
export function startIncomingRequest(
  headers: Record<string, string | string[] | undefined>,
  name: string,
  attributes: Attributes,
  trustIncoming: boolean,
): IncomingRequest | null {
  if (!active) return null;
  const given = propagation.extract(ROOT_CONTEXT, headers);
  const remote = trace.getSpanContext(given);
  const parent = trustIncoming ? given : ROOT_CONTEXT;
  const links: Link[] = !trustIncoming && remote ? [{ context: remote }] : [];
  const span = tracer().startSpan(name, { kind: SpanKind.SERVER, attributes, links }, parent);
  return { span, context: trace.setSpan(parent, span) };
}

/** Ends a request's span: named by its method and route, with its status (5xx and a cut-off answer are errors). */
export function endIncomingRequest(incoming: IncomingRequest, name: string, status: number, finished: boolean): void {
  const { span } = incoming;
  span.updateName(name);
  span.setAttribute('http.route', name.slice(name.indexOf(' ') + 1));
  span.setAttribute('http.response.status_code', status);
  if (status >= 500 || !finished) span.setStatus({ code: SpanStatusCode.ERROR });
  if (!finished) span.setAttribute('cp.outcome', 'aborted');
  span.end();
}

/** Runs `fn` with `ctx` as the active context (a request's handling, a job's work). */
export function runInContext<T>(ctx: Context, fn: () => T): T {
  return context.with(ctx, fn);
}

/** The active span's W3C `traceparent`, to be kept with a record a later process acts on; undefined without one. */
export function currentTraceparent(): string | undefined {
  if (!active) return undefined;
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent;
}

/** The context a kept `traceparent` names (for a span that continues it in another process or later). */
export function contextOf(traceparent: string | undefined): Context {
  return traceparent ? propagation.extract(ROOT_CONTEXT, { traceparent }) : ROOT_CONTEXT;
}

/** `trace_id` and `span_id` of the active span, for log lines (pino's mixin, which merges into what it gets: a new object each time); nothing without one. */
export function traceLogFields(): Record<string, string> {
  if (!active) return {};
  const span = trace.getSpan(context.active());
  if (!span) return {};
  const { traceId, spanId } = span.spanContext();
  return { trace_id: traceId, span_id: spanId };
}
