import { Agent, request } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { Principal } from '@cp/credentials';
import { ServiceError } from '@cp/errors';
import type { SessionValidator } from './authenticate';

/**
 * Asks the session-service's internal endpoint whether an auth.sid is a live session. It sits on
 * every auth.sid request, so it uses node:http over kept-alive sockets (cheaper than fetch).
 */
export class HttpSessionValidator implements SessionValidator {
  private readonly url: URL;
  private readonly agent: Agent;

  constructor(
    baseUrl: string,
    private readonly secret?: string,
    private readonly timeoutMs = 5_000,
  ) {
    this.url = new URL('/internal/sessions/validate', baseUrl);
    const options = { keepAlive: true, maxSockets: 256, keepAliveMsecs: 10_000 };
    this.agent = this.url.protocol === 'https:' ? new HttpsAgent(options) : new Agent(options);
  }

  async validate(sid: string): Promise<Principal | null> {
    let answer: { status: number; body: string };
    try {
      answer = await this.post(JSON.stringify({ sid }));
    } catch (error) {
      throw ServiceError.of('sessionServiceUnavailable', undefined, { cause: error });
    }
    if (answer.status === 404 || answer.status === 401) return null;
    if (answer.status !== 200) throw ServiceError.of('sessionServiceUnavailable', `the session service answered ${answer.status}`);
    const body = JSON.parse(answer.body) as { userId: string; owners: string[] };
    return { kind: 'session', subject: body.userId, owners: body.owners.map((o) => o.toLowerCase()) };
  }

  private post(payload: string): Promise<{ status: number; body: string }> {
    const send = this.url.protocol === 'https:' ? httpsRequest : request;
    return new Promise((resolve, reject) => {
      const req = send(
        this.url,
        {
          method: 'POST',
          agent: this.agent,
          timeout: this.timeoutMs,
          headers: {
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(payload),
            ...(this.secret ? { 'x-internal-secret': this.secret } : {}),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
          res.on('error', reject);
        },
      );
      req.on('timeout', () => req.destroy(new Error('session service timed out')));
      req.on('error', reject);
      req.end(payload);
    });
  }
}
