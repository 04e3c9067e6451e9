import { Agent, request, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { closeIdleSockets } from './idleSockets';
import type { ServiceError } from '@cp/errors';
import { endOutgoingCall, startOutgoingCall } from '@cp/tracing';
import { INTERNAL_SECRET_HEADER } from './requireInternalSecret';

export interface InternalClientOptions {
  /** The called service, e.g. `http://session-service:8083`. */
  baseUrl: string;
  /** Sent as `x-internal-secret` (the called service's secret for this caller); none, none sent. */
  secret?: string;
  /** Longest time a call may take, answer included. */
  timeoutMs: number;
  /** The error (a 503) a call answers when the called service cannot be reached or times out. */
  unavailable: (cause?: unknown) => ServiceError;
}

/** A called service's answer, read whole (internal answers are small JSON bodies). */
export interface InternalAnswer {
  status: number;
  body: string;
}

/**
 * Posts JSON to another service's /internal/* routes with this caller's secret, over kept-alive
 * sockets (some calls sit on every request). A network failure or timeout is the ServiceError of
 * `unavailable`; what a status means is the caller's to say.
 */
export class InternalClient {
  private readonly base: URL;
  private readonly agent: Agent;

  constructor(private readonly options: InternalClientOptions) {
    this.base = new URL(options.baseUrl);
    const agentOptions = { keepAlive: true, maxSockets: 256, keepAliveMsecs: 10_000 };
    this.agent = closeIdleSockets(
      this.base.protocol === 'https:' ? new HttpsAgent(agentOptions) : new Agent(agentOptions),
    );
  }

  /** The 503 of `unavailable`, for answers the caller cannot use. */
  unavailable(cause?: unknown): ServiceError {
    return this.options.unavailable(cause);
  }

  async post(path: string, payload: unknown): Promise<InternalAnswer> {
    try {
      return await this.send(new URL(path, this.base), JSON.stringify(payload));
    } catch (error) {
      throw this.unavailable(error);
    }
  }

  private send(url: URL, payload: string): Promise<InternalAnswer> {
    const { secret, timeoutMs } = this.options;
    const send = url.protocol === 'https:' ? httpsRequest : request;
    // The called service continues this trace (W3C traceparent), when tracing.
    const call = startOutgoingCall(`POST ${url.pathname}`, {
      'http.request.method': 'POST',
      'server.address': url.hostname,
      'url.path': url.pathname,
    });
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => req.destroy(new Error(`${url.host} did not answer within ${timeoutMs} ms`)),
        timeoutMs,
      );
      let settled = false;
      const fail = (error: Error) => {
        clearTimeout(timer);
        if (!settled) endOutgoingCall(call, undefined, error);
        settled = true;
        reject(error);
      };
      const req = send(
        url,
        {
          method: 'POST',
          agent: this.agent,
          headers: {
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(payload),
            ...(secret ? { [INTERNAL_SECRET_HEADER]: secret } : {}),
            ...call?.headers,
          },
        },
        (res: IncomingMessage) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            clearTimeout(timer);
            if (!settled) endOutgoingCall(call, res.statusCode);
            settled = true;
            resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') });
          });
          res.on('error', fail);
          res.on('close', () => {
            if (!res.complete) fail(new Error(`${url.host} broke off its answer`));
          });
        },
      );
      req.on('error', fail);
      req.end(payload);
    });
  }
}
