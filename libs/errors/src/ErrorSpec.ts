/** A code's status, family and default message (see catalogue.ts for the families). */
export interface ErrorSpec {
  readonly status: number;
  readonly family: 'contents' | 'signin' | 'gateway';
  /** Used when the throw site gives no more specific message. */
  readonly message: string;
  /**
   * What to do about it, in a sentence, for people: the client's hint (libs/errors/generate.js
   * writes it there). Every code the API answers has one; `internal` codes none.
   */
  readonly hint?: string;
  /** 503s carry Retry-After: this many seconds (5 unless said otherwise). */
  readonly retryAfterSeconds?: number;
  readonly internal?: true;
}
