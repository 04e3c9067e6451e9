// An OTLP/HTTP (JSON) trace receiver on 127.0.0.1 for the tests: keeps every span the services
// export, with the service that sent it, and every request body as it came (for the secret search).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

type OtlpValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number };
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: { key: string; value: OtlpValue }[];
  links?: { traceId: string; spanId: string }[];
  status?: { code?: number };
}

/** A received span, its attributes flattened. */
export interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string | null;
  name: string;
  /** 1 internal, 2 server, 3 client (OTLP's SpanKind). */
  kind: number;
  attributes: Record<string, string | number | boolean>;
  links: { traceId: string; spanId: string }[];
}

export const SPAN_KIND = { internal: 1, server: 2, client: 3 } as const;

export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  /** Every export request's body, as sent. */
  readonly bodies: string[] = [];
  private server: Server | null = null;

  /** Starts listening; answers the endpoint to give as OTEL_EXPORTER_OTLP_ENDPOINT. */
  async start(): Promise<string> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        if (req.url === '/v1/traces' && req.method === 'POST') {
          this.bodies.push(text);
          this.take(JSON.parse(text));
        }
        res.setHeader('content-type', 'application/json');
        res.end('{}');
      });
    });
    await new Promise<void>((r) => this.server!.listen(0, '127.0.0.1', r));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((r) => this.server?.close(r));
  }

  /** Waits (at most `ms`) until `done` holds of the spans received. */
  async until(done: (spans: ReceivedSpan[]) => boolean, ms = 15_000): Promise<void> {
    const deadline = Date.now() + ms;
    while (!done(this.spans)) {
      if (Date.now() > deadline) throw new Error(`spans not received within ${ms} ms (${this.spans.length} so far)`);
      await sleep(100);
    }
  }

  trace(traceId: string): ReceivedSpan[] {
    return this.spans.filter((s) => s.traceId === traceId);
  }

  private take(body: {
    resourceSpans?: {
      resource?: { attributes?: { key: string; value: OtlpValue }[] };
      scopeSpans?: { spans?: OtlpSpan[] }[];
    }[];
  }): void {
    for (const rs of body.resourceSpans ?? []) {
      const service = String(flatten(rs.resource?.attributes)['service.name'] ?? '');
      for (const ss of rs.scopeSpans ?? [])
        for (const s of ss.spans ?? [])
          this.spans.push({
            service,
            traceId: s.traceId,
            spanId: s.spanId,
            parentSpanId: s.parentSpanId || null,
            name: s.name,
            kind: s.kind,
            attributes: flatten(s.attributes),
            links: (s.links ?? []).map((l) => ({ traceId: l.traceId, spanId: l.spanId })),
          });
    }
  }
}

function flatten(
  attributes: { key: string; value: OtlpValue }[] | undefined,
): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const { key, value } of attributes ?? [])
    out[key] =
      value.stringValue ??
      (value.intValue !== undefined ? Number(value.intValue) : undefined) ??
      value.boolValue ??
      value.doubleValue ??
      '';
  return out;
}
