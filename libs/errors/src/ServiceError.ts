import { ERROR_CATALOGUE, type ErrorCode } from './catalogue';

export interface ServiceErrorOptions {
  /** Extra response headers, e.g. Content-Range. */
  headers?: Record<string, string>;
  cause?: unknown;
}

export interface ServiceErrorOfOptions extends ServiceErrorOptions {
  /**
   * Another status than the catalogue's, only where the same code has long been answered with
   * another one (an internal route, a passthrough of the request's own 4xx).
   */
  status?: number;
  /** Retry-After of a 503, in seconds; the catalogue's (or 5) otherwise. */
  retryAfterSeconds?: number;
}

/**
 * The one error type the services throw on purpose. `code` is stable and machine-readable and
 * declared in the catalogue (`catalogue.ts`); it becomes `urn:error:contents:<code>` on /v1 or
 * `Code` on /auth and /sessions; `message` is for people. Anything thrown that is not a
 * ServiceError is answered as a 500 without details.
 */
export class ServiceError extends Error {
  override readonly name = 'ServiceError';
  readonly headers: Record<string, string>;

  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    message: string,
    options: ServiceErrorOptions = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.headers = options.headers ?? {};
  }

  /**
   * The error of a catalogued code, with its status, and its message unless the throw site has
   * a more specific one. A 503 carries Retry-After.
   */
  static of(code: ErrorCode, message?: string, options: ServiceErrorOfOptions = {}): ServiceError {
    const spec: { status: number; message: string; retryAfterSeconds?: number } = ERROR_CATALOGUE[code];
    const status = options.status ?? spec.status;
    const headers =
      status === 503
        ? { 'Retry-After': String(options.retryAfterSeconds ?? spec.retryAfterSeconds ?? 5), ...options.headers }
        : options.headers;
    return new ServiceError(status, code, message ?? spec.message, { headers, cause: options.cause });
  }
}
