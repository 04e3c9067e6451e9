import { setTimeout as sleep } from 'node:timers/promises';
import { ApiError, TransportError } from './errors';
import type { Session } from './Session';
import type { Received, Sent, Transport } from './transport';

export type Call = Omit<Sent, 'headers'> & { headers: Record<string, string> };

/**
 * API calls as the client makes them: with the session's credentials, retried on network errors
 * and 5xx (exponential backoff with jitter, honouring Retry-After), and sent again once after a
 * 401 that a refresh of the session can cure.
 */
export class ApiCalls {
  constructor(
    readonly transport: Transport,
    private readonly session: Session,
    private readonly base: URL,
    /** Attempts per request on network errors and 5xx. */
    private readonly attempts: number,
  ) {}

  url(path: string): URL {
    return new URL(path, this.base);
  }

  /** One API call with credentials, retries (network errors, 5xx) and one refresh on 401. */
  async call(req: Call): Promise<Received> {
    let refreshed = false;
    for (let attempt = 1; ; attempt++) {
      const sentWith = this.session.current;
      try {
        return await this.transport.send({ ...req, headers: { ...req.headers, authorization: this.session.authorization() } });
      } catch (error) {
        if (req.signal?.aborted) throw req.signal.reason ?? error;
        if (error instanceof ApiError && error.status === 401 && !refreshed && this.session.canRefresh()) {
          refreshed = true;
          // Another call may have refreshed while this one was under way: then just send it again.
          if (this.session.current === sentWith || this.session.isRefreshing) await this.session.refresh(req.signal);
          attempt--;
          continue;
        }
        const retriable = error instanceof TransportError || (error instanceof ApiError && error.status >= 500);
        if (!retriable || attempt >= this.attempts) throw error;
        const retryAfter = error instanceof ApiError && error.retryAfterSeconds !== null ? error.retryAfterSeconds * 1000 : 0;
        const backoff = Math.min(30_000, 250 * 2 ** (attempt - 1)) * (0.5 + Math.random());
        await sleep(Math.max(retryAfter, backoff), undefined, { signal: req.signal });
      }
    }
  }
}

/** A header's (first) value. */
export function header(res: Received, name: string): string | undefined {
  const v = res.headers[name];
  return Array.isArray(v) ? v[0] : v;
}
