import { context, trace } from '@opentelemetry/api';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace';
import { createLogger } from '@cp/logging';
import {
  contextOf,
  currentTraceparent,
  endOutgoingCall,
  inS3Span,
  inSpan,
  isTracing,
  runInContext,
  sanitizeText,
  setTracing,
  startIncomingRequest,
  startOutgoingCall,
  startTracing,
  traceLogFields,
  tracingOptions,
  type TracingSettings,
} from '../src';

const OFF: TracingSettings = {
  OTEL_SDK_DISABLED: false,
  OTEL_TRACES_SAMPLER: 'parentbased_always_on',
  OTEL_TRACES_SAMPLER_ARG: 1,
  OTEL_BSP_SCHEDULE_DELAY: 5000,
};

describe('tracing settings', () => {
  it('is off unless an exporter or an OTLP endpoint is set', () => {
    expect(tracingOptions(OFF, 'gateway')).toBeNull();
    expect(tracingOptions({ ...OFF, OTEL_TRACES_EXPORTER: 'otlp' }, 'gateway')?.tracesUrl).toBe(
      'http://localhost:4318/v1/traces',
    );
    expect(tracingOptions({ ...OFF, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318/' }, 'gateway')).toMatchObject({
      tracesUrl: 'http://c:4318/v1/traces',
      serviceName: 'gateway',
    });
    expect(
      tracingOptions({ ...OFF, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c/t', OTEL_SERVICE_NAME: 'gw-eu' }, 'g'),
    ).toMatchObject({ tracesUrl: 'http://c/t', serviceName: 'gw-eu' });
  });

  it('stays off with OTEL_SDK_DISABLED or OTEL_TRACES_EXPORTER=none, whatever the endpoint', () => {
    const endpoint = { ...OFF, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' };
    expect(tracingOptions({ ...endpoint, OTEL_SDK_DISABLED: true }, 'g')).toBeNull();
    expect(tracingOptions({ ...endpoint, OTEL_TRACES_EXPORTER: 'none' }, 'g')).toBeNull();
  });
});

describe('spans without tracing', () => {
  it('runs the work and makes no span, context or log field', async () => {
    expect(isTracing()).toBe(false);
    expect(startTracing(null, createLogger({ service: 't', level: 'silent' }))).toBeDefined();
    expect(isTracing()).toBe(false);
    await expect(inSpan('x', undefined, async () => trace.getActiveSpan())).resolves.toBeUndefined();
    expect(startOutgoingCall('x', {})).toBeNull();
    expect(
      startIncomingRequest({ traceparent: `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01` }, 'GET', {}, true),
    ).toBeNull();
    expect(currentTraceparent()).toBeUndefined();
    expect(traceLogFields()).toEqual({});
  });
});

describe('credentials never leave in a span', () => {
  it('masks secret query parameters and replaces what still looks like a credential', () => {
    expect(sanitizeText('/sessions/v5.13/sessions/refresh?auth.sid=abc&refresh-token=def&x=1')).toBe(
      '/sessions/v5.13/sessions/refresh?auth.sid=[redacted]&refresh-token=[redacted]&x=1',
    );
    expect(sanitizeText('http://s3/b/k?partNumber=2&X-Amz-Credential=AK%2F&X-Amz-Signature=ff')).not.toMatch(/AK|ff$/);
    expect(sanitizeText('auth.sid 0123456789')).toBe('[redacted]');
    expect(sanitizeText('S3 UploadPart')).toBe('S3 UploadPart');
  });
});

describe('spans with tracing', () => {
  const exporter = new InMemorySpanExporter();
  let stop: () => Promise<void>;
  beforeAll(() => {
    const options = tracingOptions({ ...OFF, OTEL_TRACES_EXPORTER: 'otlp', OTEL_BSP_SCHEDULE_DELAY: 10 }, 'test')!;
    stop = startTracing(options, createLogger({ service: 't', level: 'silent' }), exporter).shutdown;
  });
  afterAll(async () => {
    await stop();
    setTracing(false);
    trace.disable();
    context.disable();
  });
  const flushed = async () => {
    await new Promise((r) => setTimeout(r, 50));
    return exporter.getFinishedSpans();
  };

  it('continues a trusted traceparent and links an untrusted one from a new trace', async () => {
    exporter.reset();
    const traceId = 'c'.repeat(32);
    const parent = 'd'.repeat(16);
    const headers = { traceparent: `00-${traceId}-${parent}-01` };
    const trusted = startIncomingRequest(headers, 'GET', {}, true)!;
    trusted.span.end();
    const restarted = startIncomingRequest(headers, 'GET', {}, false)!;
    restarted.span.end();
    const [a, b] = await flushed();
    expect(a!.spanContext().traceId).toBe(traceId);
    expect(a!.parentSpanContext?.spanId).toBe(parent);
    expect(b!.spanContext().traceId).not.toBe(traceId);
    expect(b!.parentSpanContext).toBeUndefined();
    expect(b!.links.map((l) => l.context.spanId)).toEqual([parent]);
  });

  it('makes children of the active span, carries them in headers and names them in log fields', async () => {
    exporter.reset();
    const request = startIncomingRequest({}, 'POST', {}, true)!;
    let headers: Record<string, string> = {};
    let fields: Record<string, string> = {};
    let kept: string | undefined;
    await runInContext(request.context, async () => {
      await inS3Span('UploadPart', { bucket: 'b', key: 'k', partNumber: 3, bytes: 10 }, async () => {
        fields = traceLogFields();
        kept = currentTraceparent();
      });
      const call = startOutgoingCall('POST /internal/x', {});
      headers = call!.headers;
      endOutgoingCall(call, 200);
      endOutgoingCall(call, 500); // a second end is no end
    });
    request.span.end();
    const spans = await flushed();
    const [s3, out, server] = spans;
    const traceId = server!.spanContext().traceId;
    expect(spans.map((s) => s.name)).toEqual(['S3 UploadPart', 'POST /internal/x', 'POST']);
    expect(s3!.attributes).toMatchObject({ 'aws.s3.part_number': 3, 'cp.s3.bytes_sent': 10 });
    expect(s3!.parentSpanContext?.spanId).toBe(server!.spanContext().spanId);
    expect(fields).toEqual({ trace_id: traceId, span_id: s3!.spanContext().spanId });
    expect(headers.traceparent).toBe(`00-${traceId}-${out!.spanContext().spanId}-01`);
    expect(out!.attributes['http.response.status_code']).toBe(200);
    // A kept traceparent (a webhook's outbox record) continues the trace later, anywhere.
    expect(trace.getSpanContext(contextOf(kept))?.traceId).toBe(traceId);
  });

  it('makes no backend span outside a request or job', async () => {
    exporter.reset();
    await inS3Span('HeadObject', { bucket: 'b' }, async () => undefined);
    expect(await flushed()).toEqual([]);
  });

  it('replaces an attribute named like a credential before it leaves', async () => {
    exporter.reset();
    await inSpan(
      'GET /x?apiKey=k1',
      { 'http.request.header.authorization': 'Bearer t1', 'url.full': 'http://h/p?sid=s1' },
      async () => undefined,
    );
    const [span] = await flushed();
    expect(span!.name).toBe('GET /x?apiKey=[redacted]');
    expect(JSON.stringify(span!.attributes)).not.toMatch(/k1|t1|s1/);
  });
});
