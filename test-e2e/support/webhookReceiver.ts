// A webhook receiver on 127.0.0.1 for the tests: records each delivery, answers as told.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { call } from './http';
import { tokenFor } from './stack';

export interface Delivered {
  headers: IncomingHttpHeaders;
  body: string;
  /** The status it was answered with. */
  status: number;
  at: number;
}

export class WebhookReceiver {
  readonly received: Delivered[] = [];
  /** Statuses to answer, one per delivery, then `otherwise`. */
  answers: number[] = [];
  otherwise = 200;
  /** How long to hold each delivery before answering. */
  holdMs = 0;
  /** Deliveries whose request has arrived, answered or not. */
  arrived = 0;
  private server: Server | null = null;

  async start(): Promise<string> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        this.arrived++;
        const status = this.answers.shift() ?? this.otherwise;
        const delivered = { headers: req.headers, body: Buffer.concat(chunks).toString(), status, at: Date.now() };
        void sleep(this.holdMs).then(() => {
          this.received.push(delivered);
          res.statusCode = status;
          res.end();
        });
      });
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hook`;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((r) => this.server?.close(r));
  }

  /** The deliveries of one event id. */
  of(eventId: string): Delivered[] {
    return this.received.filter((d) => d.headers['webhook-id'] === eventId);
  }

  /** Deliveries whose body is about the content `contentId` with type `type`. */
  about(contentId: string, type: string): Delivered[] {
    return this.received.filter((d) => {
      const e = JSON.parse(d.body) as { type: string; content: { id: string } };
      return e.type === type && e.content.id === contentId;
    });
  }

  /** Waits until `done()` holds, at most `ms`. */
  async until(done: () => boolean, ms = 20_000): Promise<void> {
    const deadline = Date.now() + ms;
    while (!done()) {
      if (Date.now() > deadline) throw new Error(`not delivered within ${ms} ms: ${this.received.length} deliveries`);
      await sleep(50);
    }
  }
}

/** A new owner with its token and one webhook to `url` for `events`, registered through `gatewayUrl`. */
export async function registerOwner(gatewayUrl: string, url: string, events: string[]) {
  const owner = randomUUID();
  const token = await tokenFor([owner]);
  const created = await call(`${gatewayUrl}/v1/${owner}/webhooks`, {
    method: 'POST',
    token,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ url, events }),
  });
  if (created.status !== 201) throw new Error(`the webhook was answered ${created.status}: ${created.body.toString()}`);
  const hook = created.json() as { id: string; secret: string; url: string; events: string[] };
  return { owner, token, hook };
}
