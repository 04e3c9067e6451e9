import { context, SpanKind, trace, type Attributes } from '@opentelemetry/api';
import { inChildSpan, isTracing } from './spans';

/** The part of an AWS SDK v3 client this needs (its middleware stack), without depending on the SDK. */
export interface MiddlewareStackClient {
  middlewareStack: {
    add(
      middleware: (
        next: (args: { input: object }) => Promise<{ output?: unknown }>,
        context: { commandName?: string },
      ) => (args: { input: object }) => Promise<{ output?: unknown }>,
      options: { step: 'initialize'; name: string },
    ): void;
  };
}

/** What an S3 span tells of its call. */
export interface S3Call {
  bucket?: string;
  key?: string;
  partNumber?: number;
  /** Bytes sent (a write's Content-Length). */
  bytes?: number;
  range?: string;
}

/** Runs an S3 call as a CLIENT span `S3 <operation>` under the active span (none without one, or without tracing). */
export function inS3Span<T>(operation: string, call: S3Call, work: () => Promise<T>): Promise<T> {
  if (!isTracing()) return work();
  const attributes: Attributes = { 'rpc.system': 'aws-api', 'rpc.service': 'S3', 'rpc.method': operation };
  if (call.bucket !== undefined) attributes['aws.s3.bucket'] = call.bucket;
  if (call.key !== undefined) attributes['aws.s3.key'] = call.key;
  if (call.partNumber !== undefined) attributes['aws.s3.part_number'] = call.partNumber;
  if (call.bytes !== undefined) attributes['cp.s3.bytes_sent'] = call.bytes;
  if (call.range !== undefined) attributes['cp.s3.range'] = call.range;
  return inChildSpan(`S3 ${operation}`, attributes, SpanKind.CLIENT, work);
}

/**
 * A CLIENT span for each S3 call made under an active span: the operation, bucket, key, part
 * number and bytes sent or received, and the HTTP status. Never the query, headers or a presigned
 * URL (presigning makes no call, so no span). Without tracing the client is left as it is.
 */
export function traceS3<C extends MiddlewareStackClient>(client: C): C {
  if (!isTracing()) return client;
  client.middlewareStack.add(
    (next, ctx) => async (args) => {
      const input = args.input as Record<string, unknown>;
      const operation = (ctx.commandName ?? 'S3Command').replace(/Command$/, '');
      const call: S3Call = {
        bucket: typeof input.Bucket === 'string' ? input.Bucket : undefined,
        key: typeof input.Key === 'string' ? input.Key : undefined,
        partNumber: typeof input.PartNumber === 'number' ? input.PartNumber : undefined,
        bytes: typeof input.ContentLength === 'number' ? input.ContentLength : undefined,
        range: typeof input.Range === 'string' ? input.Range : undefined,
      };
      return inS3Span(operation, call, async () => {
        const result = await next(args);
        const output = result.output as
          { ContentLength?: unknown; $metadata?: { httpStatusCode?: number } } | undefined;
        const span = trace.getSpan(context.active());
        if (typeof output?.ContentLength === 'number') span?.setAttribute('cp.s3.bytes_received', output.ContentLength);
        if (output?.$metadata?.httpStatusCode)
          span?.setAttribute('http.response.status_code', output.$metadata.httpStatusCode);
        return result;
      });
    },
    { step: 'initialize', name: 'cpTracing' },
  );
  return client;
}
