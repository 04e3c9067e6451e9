/** Which traces are kept: the OTEL_TRACES_SAMPLER names. */
export type SamplerName =
  | 'always_on'
  | 'always_off'
  | 'traceidratio'
  | 'parentbased_always_on'
  | 'parentbased_always_off'
  | 'parentbased_traceidratio';

/** The OTEL_* settings a service reads (see `tracingSettings` in @cp/config), as parsed. */
export interface TracingSettings {
  OTEL_SDK_DISABLED: boolean;
  OTEL_TRACES_EXPORTER?: 'otlp' | 'none';
  OTEL_EXPORTER_OTLP_ENDPOINT?: string;
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?: string;
  OTEL_SERVICE_NAME?: string;
  OTEL_TRACES_SAMPLER: SamplerName;
  OTEL_TRACES_SAMPLER_ARG: number;
  OTEL_BSP_SCHEDULE_DELAY: number;
}

/** What `startTracing` needs: where spans go, how many are kept, how the service is named. */
export interface TracingOptions {
  /** The OTLP/HTTP (JSON) traces URL, `…/v1/traces`. */
  tracesUrl: string;
  serviceName: string;
  sampler: SamplerName;
  /** The ratio of the `*traceidratio` samplers, 0 to 1. */
  ratio: number;
  /** How long finished spans wait before they are sent in a batch. */
  scheduledDelayMs: number;
}

/** The OTLP/HTTP default endpoint (a collector on the same host). */
const DEFAULT_ENDPOINT = 'http://localhost:4318';

/**
 * The tracing of a service, or null when it is off: off unless OTEL_TRACES_EXPORTER=otlp or an
 * OTLP endpoint is set, and always off with OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none.
 */
export function tracingOptions(settings: TracingSettings, service: string): TracingOptions | null {
  if (settings.OTEL_SDK_DISABLED || settings.OTEL_TRACES_EXPORTER === 'none') return null;
  const endpoint = settings.OTEL_EXPORTER_OTLP_ENDPOINT;
  const traces = settings.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT;
  if (settings.OTEL_TRACES_EXPORTER !== 'otlp' && !endpoint && !traces) return null;
  return {
    // The signal's own endpoint is used as it is; the general one gets the signal's path (OTLP spec).
    tracesUrl: traces ?? `${(endpoint ?? DEFAULT_ENDPOINT).replace(/\/+$/, '')}/v1/traces`,
    serviceName: settings.OTEL_SERVICE_NAME ?? service,
    sampler: settings.OTEL_TRACES_SAMPLER,
    ratio: settings.OTEL_TRACES_SAMPLER_ARG,
    scheduledDelayMs: settings.OTEL_BSP_SCHEDULE_DELAY,
  };
}
