import { context, propagation, trace } from '@opentelemetry/api';
import type { Logger } from '@cp/logging';
import type { SpanExporter } from '@opentelemetry/sdk-trace';
import { SanitizingSpanProcessor } from './SanitizingSpanProcessor';
import { setTracing } from './spans';
import { traceRedisCommands } from './redisSpans';
import type { SamplerName, TracingOptions } from './TracingOptions';

/** A started tracing: `shutdown` sends what is left and stops (after the server has stopped). */
export interface Tracing {
  shutdown(): Promise<void>;
}

const OFF: Tracing = { shutdown: async () => undefined };

/**
 * Starts the SDK when `options` is given (see `tracingOptions`): W3C trace context, a context
 * manager on AsyncLocalStorage, spans batched to the OTLP/HTTP (JSON) endpoint, with every
 * attribute sanitized before it leaves. Null options: nothing is loaded or registered, and every
 * span helper of this package returns at its first check. `exporter` replaces OTLP (tests).
 */
export function startTracing(options: TracingOptions | null, logger: Logger, exporter?: SpanExporter): Tracing {
  if (!options) return OFF;
  // Loaded here: a process that does not trace never loads the SDK.
  /* eslint-disable @typescript-eslint/no-require-imports -- on demand, see above */
  const sdk = require('@opentelemetry/sdk-trace') as typeof import('@opentelemetry/sdk-trace');
  const { AsyncLocalStorageContextManager } =
    require('@opentelemetry/context-async-hooks') as typeof import('@opentelemetry/context-async-hooks');
  const { W3CTraceContextPropagator } = require('@opentelemetry/core') as typeof import('@opentelemetry/core');
  const { resourceFromAttributes } = require('@opentelemetry/resources') as typeof import('@opentelemetry/resources');
  const { OTLPTraceExporter } =
    require('@opentelemetry/exporter-trace-otlp-http') as typeof import('@opentelemetry/exporter-trace-otlp-http');
  /* eslint-enable @typescript-eslint/no-require-imports */

  const sampler = samplerOf(sdk, options.sampler, options.ratio);
  const provider = new sdk.TracerProvider({
    sampler,
    resource: resourceFromAttributes({ 'service.name': options.serviceName }),
    spanProcessors: [
      new SanitizingSpanProcessor(
        new sdk.BatchSpanProcessor({
          exporter: exporter ?? new OTLPTraceExporter({ url: options.tracesUrl }),
          scheduledDelayMillis: options.scheduledDelayMs,
        }),
      ),
    ],
  });
  const contextManager = new AsyncLocalStorageContextManager();
  contextManager.enable();
  context.setGlobalContextManager(contextManager);
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  const stopRedis = traceRedisCommands();
  setTracing(true);
  logger.info(
    { tracesUrl: exporter ? '(in process)' : options.tracesUrl, sampler: options.sampler, ratio: options.ratio },
    'tracing on',
  );
  return {
    shutdown: async () => {
      stopRedis();
      await provider.shutdown().catch((error: unknown) => logger.warn({ err: error }, 'could not send the last spans'));
    },
  };
}

function samplerOf(sdk: typeof import('@opentelemetry/sdk-trace'), name: SamplerName, ratio: number) {
  const parentBased = (root: import('@opentelemetry/sdk-trace').Sampler) => new sdk.ParentBasedSampler({ root });
  switch (name) {
    case 'always_on':
      return new sdk.AlwaysOnSampler();
    case 'always_off':
      return new sdk.AlwaysOffSampler();
    case 'traceidratio':
      return new sdk.TraceIdRatioBasedSampler(ratio);
    case 'parentbased_always_off':
      return parentBased(new sdk.AlwaysOffSampler());
    case 'parentbased_traceidratio':
      return parentBased(new sdk.TraceIdRatioBasedSampler(ratio));
    default:
      return parentBased(new sdk.AlwaysOnSampler());
  }
}
