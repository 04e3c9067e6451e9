import { ApiError } from './errors';
import type { RetryPolicy } from './RetryPolicy';
import type { Session } from './Session';
import type { Received, Sent, Transport } from './transport';

export type Call = Omit<Sent, 'headers'> & {
  headers: Record<string, string>;
  /** Headers that depend on the attempt (a download's Range after a body broke off), merged over `headers`. */
  headersFor?: () => Record<string, string>;
  /** Must not take effect twice: retried only after failures where the service surely did not act (see retryReason). */
  once?: boolean;
};

/**
 * API calls as the client makes them: with the session's credentials, retried within the retry
 * policy's time budget (503, 429, 408, 502, 504, refused or broken connections), and sent again
 * once after a 401 that a refresh of the session can cure.
 */
export class ApiCalls {
  constructor(
    readonly transport: Transport,
    private readonly session: Session,
    private readonly base: URL,
    private readonly retries: RetryPolicy,
  ) {}

  url(path: string): URL {
    return new URL(path, this.base);
  }

  /** One API call with credentials, retries and one refresh on 401. */
  call(req: Call): Promise<Received> {
    let refreshed = false;
    const { headersFor, once, ...sent } = req;
    return this.retries.run({ method: req.method, path: req.url.pathname, signal: req.signal, once }, async () => {
      for (;;) {
        const sentWith = this.session.current;
        try {
          return await this.transport.send({
            ...sent,
            headers: { ...req.headers, ...headersFor?.(), authorization: this.session.authorization() },
          });
        } catch (error) {
          if (req.signal?.aborted) throw req.signal.reason ?? error;
          if (!(error instanceof ApiError && error.status === 401 && !refreshed && this.session.canRefresh()))
            throw error;
          refreshed = true;
          // Another call may have refreshed while this one was under way: then just send it again.
          if (this.session.current === sentWith || this.session.isRefreshing) await this.session.refresh(req.signal);
        }
      }
    });
  }
}

/** A header's (first) value. */
export function header(res: Received, name: string): string | undefined {
  const v = res.headers[name];
  return Array.isArray(v) ? v[0] : v;
}
