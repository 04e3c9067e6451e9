import { request as httpRequest, Agent } from 'node:http';
import { recordExchange } from './contract';

const agent = new Agent({ keepAlive: true, maxSockets: 16 });

export interface RawAnswer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/**
 * A request as the official clients send it: with Content-Length, or (chunked: true) with
 * Transfer-Encoding: chunked and no length.
 */
export function send(
  method: string,
  url: string,
  headers: Record<string, string>,
  body?: Buffer,
  opts: { chunked?: boolean } = {},
): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const h: Record<string, string | number> = { ...headers };
    if (body && !opts.chunked) h['content-length'] = body.length;
    if (body && opts.chunked) h['transfer-encoding'] = 'chunked';
    const req = httpRequest(url, { method, headers: h, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const answer = { status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) };
        recordExchange(method, url, answer.status, answer.headers, answer.body);
        resolve(answer);
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    if (body && opts.chunked) {
      // several chunks, as a streaming client would send them
      const step = Math.max(1, Math.ceil(body.length / 3));
      for (let i = 0; i < body.length; i += step) req.write(body.subarray(i, i + step));
      req.end();
    } else {
      req.end(body);
    }
  });
}

/** The C# client's strict reading of Content-Range: `bytes a-b/total`, total required. */
export function parseStrictContentRange(value: string | string[] | undefined): { a: number; b: number; total: number } {
  const m = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(String(value ?? ''));
  if (!m) throw new Error(`Content-Range ${JSON.stringify(value)} is not "bytes a-b/total"`);
  return { a: Number(m[1]), b: Number(m[2]), total: Number(m[3]) };
}
