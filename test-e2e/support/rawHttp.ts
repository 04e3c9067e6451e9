import { connect } from 'node:net';

/** One HTTP response read off a raw connection. */
export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  /** Every value of each header, for the ones sent twice. */
  headerCounts: Record<string, number>;
  body: Buffer;
  /** Milliseconds from the first byte written to this response's head being read. */
  atMs: number;
}

export interface RawExchange {
  /** Every response on the connection, 1xx included, in order. */
  responses: RawResponse[];
  /** The final (non-1xx) responses. */
  finals: RawResponse[];
  /** Bytes after the last response that do not parse as one. */
  leftover: string;
  /** Whether the connection was still open at the deadline. */
  timedOut: boolean;
  ms: number;
}

/** A step of what is sent: bytes, or a pause in milliseconds. */
export type RawStep = Buffer | string | number;

/**
 * Writes bytes as they are (what fetch and node:http refuse to send: bad framing, duplicate or
 * broken headers, lying lengths), half-closes the connection unless told not to, and reads every
 * response until the server closes or `deadlineMs` passes.
 */
export function exchange(
  port: number,
  steps: RawStep[],
  opts: { deadlineMs?: number; halfClose?: boolean; host?: string } = {},
): Promise<RawExchange> {
  const deadlineMs = opts.deadlineMs ?? 5000;
  return new Promise((resolve) => {
    const started = Date.now();
    const socket = connect(port, opts.host ?? '127.0.0.1');
    let data = Buffer.alloc(0);
    const responses: RawResponse[] = [];
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      socket.destroy();
    }, deadlineMs);
    socket.on('data', (chunk: Buffer) => {
      data = Buffer.concat([data, chunk]);
      for (;;) {
        const parsed = parseOne(data, Date.now() - started);
        if (!parsed) break;
        responses.push(parsed.response);
        data = data.subarray(parsed.used);
      }
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({
        responses,
        finals: responses.filter((r) => r.status >= 200),
        leftover: data.toString('latin1'),
        timedOut,
        ms: Date.now() - started,
      });
    });
    void (async () => {
      for (const step of steps) {
        if (typeof step === 'number') await new Promise((r) => setTimeout(r, step));
        else if (!socket.destroyed) socket.write(typeof step === 'string' ? Buffer.from(step, 'latin1') : step);
      }
      if (opts.halfClose !== false && !socket.destroyed) socket.end();
    })();
  });
}

function parseOne(data: Buffer, atMs: number): { response: RawResponse; used: number } | null {
  const headEnd = data.indexOf('\r\n\r\n');
  if (headEnd < 0) return null;
  const [statusLine, ...lines] = data.subarray(0, headEnd).toString('latin1').split('\r\n');
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine ?? '')?.[1] ?? NaN);
  const headers: Record<string, string> = {};
  const headerCounts: Record<string, number> = {};
  for (const line of lines) {
    const i = line.indexOf(':');
    const name = line.slice(0, i).trim().toLowerCase();
    headers[name] = line.slice(i + 1).trim();
    headerCounts[name] = (headerCounts[name] ?? 0) + 1;
  }
  let offset = headEnd + 4;
  if (status < 200 || status === 204 || status === 304)
    return { response: { status, headers, headerCounts, body: Buffer.alloc(0), atMs }, used: offset };
  if (/chunked/i.test(headers['transfer-encoding'] ?? '')) {
    const parts: Buffer[] = [];
    for (;;) {
      const nl = data.indexOf('\r\n', offset);
      if (nl < 0) return null;
      const size = parseInt(data.subarray(offset, nl).toString('latin1'), 16);
      if (Number.isNaN(size)) return null;
      if (data.length < nl + 2 + size + 2) return null;
      parts.push(data.subarray(nl + 2, nl + 2 + size));
      offset = nl + 2 + size + 2;
      if (size === 0)
        return { response: { status, headers, headerCounts, body: Buffer.concat(parts), atMs }, used: offset };
    }
  }
  const length = Number(headers['content-length'] ?? 0);
  if (data.length < offset + length) return null;
  return {
    response: { status, headers, headerCounts, body: Buffer.from(data.subarray(offset, offset + length)), atMs },
    used: offset + length,
  };
}
