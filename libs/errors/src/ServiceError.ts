export interface ServiceErrorOptions {
  /** Extra response headers, e.g. Retry-After or Content-Range. */
  headers?: Record<string, string>;
  cause?: unknown;
}

/**
 * The one error type the services throw on purpose. `code` is stable and machine-readable
 * (camelCase, becomes `urn:error:contents:<code>` on /v1 or `Code` on /auth); `message` is for
 * people. Anything thrown that is not a ServiceError is answered as a 500 without details.
 */
export class ServiceError extends Error {
  override readonly name = 'ServiceError';
  readonly headers: Record<string, string>;

  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    options: ServiceErrorOptions = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.headers = options.headers ?? {};
  }

  static badRequest(code: string, message: string): ServiceError {
    return new ServiceError(400, code, message);
  }
  static unauthorized(code: string, message: string): ServiceError {
    return new ServiceError(401, code, message);
  }
  static forbidden(code: string, message: string): ServiceError {
    return new ServiceError(403, code, message);
  }
  static notFound(code: string, message: string): ServiceError {
    return new ServiceError(404, code, message);
  }
  static conflict(code: string, message: string): ServiceError {
    return new ServiceError(409, code, message);
  }
  /** A dependency (S3, MongoDB, Redis, another service) did not answer. */
  static unavailable(code: string, message: string, cause?: unknown, retryAfterSeconds = 5): ServiceError {
    return new ServiceError(503, code, message, { cause, headers: { 'Retry-After': String(retryAfterSeconds) } });
  }
}
