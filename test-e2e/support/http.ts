import { createHash, randomUUID } from 'node:crypto';
import { connect } from 'node:net';
import { recordExchange } from './contract';
import { testStack } from './stack';

export const P = 64 * 1024 * 1024;

export const sha256 = (data: Uint8Array): string => createHash('sha256').update(data).digest('hex');

export function contentsUrl(ownerId: string, contentId?: string): string {
  return `${testStack().gatewayUrl}/v1/${ownerId}/contents${contentId ? `/${contentId}` : ''}`;
}

export interface Answer {
  status: number;
  headers: Headers;
  body: Buffer;
  json: () => any; // eslint-disable-line @typescript-eslint/no-explicit-any -- test helper over arbitrary bodies
}

async function answer(method: string, url: string, res: Response): Promise<Answer> {
  const body = Buffer.from(await res.arrayBuffer());
  recordExchange(method, url, res.status, res.headers, body);
  return { status: res.status, headers: res.headers, body, json: () => JSON.parse(body.toString('utf8')) };
}

export async function call(url: string, init: RequestInit & { token?: string } = {}): Promise<Answer> {
  const headers = new Headers(init.headers);
  if (init.token) headers.set('authorization', `Bearer ${init.token}`);
  return answer(init.method ?? 'GET', url, await fetch(url, { ...init, headers }));
}

/** POST a part (or with range null, the whole content). */
export async function postPart(
  ownerId: string,
  token: string,
  body: Uint8Array,
  range: string | null,
  contentType?: string,
): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (range) headers['content-range'] = range;
  if (contentType) headers['content-type'] = contentType;
  return call(contentsUrl(ownerId), { method: 'POST', body, headers, token });
}

export async function putPart(
  ownerId: string,
  contentId: string,
  token: string,
  body: Uint8Array,
  range: string,
): Promise<Answer> {
  return call(contentsUrl(ownerId, contentId), { method: 'PUT', body, headers: { 'content-range': range }, token });
}

export async function download(ownerId: string, contentId: string, token: string, range?: string): Promise<Answer> {
  return call(contentsUrl(ownerId, contentId), { headers: range ? { range } : {}, token });
}

/** `bytes a-b/total` for the slice [start, end) of a content of `total` bytes. */
export const rangeOf = (start: number, endExclusive: number, total: number | '*'): string =>
  `bytes ${start}-${endExclusive - 1}/${total}`;

/**
 * Sends a request byte for byte over a plain socket (to send what fetch refuses to: no
 * Content-Length, a lying Content-Length, a body cut short) and reads the answer's head and body.
 */
export function rawRequest(
  head: string,
  body: Buffer | string = '',
  opts: { endAfterWrite?: boolean } = {},
): Promise<{ status: number; headers: Record<string, string>; body: string }> {
  const { gatewayUrl } = testStack();
  const url = new URL(gatewayUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname);
    const chunks: Buffer[] = [];
    socket.on('data', (d) => chunks.push(d));
    socket.on('error', reject);
    const finish = () => {
      const text = Buffer.concat(chunks).toString('latin1');
      const split = text.indexOf('\r\n\r\n');
      if (split < 0) return reject(new Error(`no HTTP answer: ${JSON.stringify(text.slice(0, 200))}`));
      const [statusLine, ...lines] = text.slice(0, split).split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const i = line.indexOf(':');
        headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
      }
      let rest = text.slice(split + 4);
      if (/chunked/i.test(headers['transfer-encoding'] ?? '')) rest = dechunk(rest);
      else if (headers['content-length']) rest = rest.slice(0, Number(headers['content-length']));
      const status = Number(statusLine!.split(' ')[1]);
      try {
        const [method, target] = head.split(/\s+/);
        recordExchange(method!, new URL(target!, gatewayUrl).href, status, headers, rest);
      } catch {
        /* a request line no URL can be made of (bad-input tests send such): nothing to record */
      }
      resolve({ status, headers, body: rest });
    };
    socket.on('end', finish);
    socket.write(head.replace(/\n/g, '\r\n').replace(/\r\r/g, '\r') + '\r\n\r\n');
    if (body.length) socket.write(body);
    if (opts.endAfterWrite) socket.end();
    // Ask the server to close after answering so 'end' marks the whole answer.
  });
}

function dechunk(s: string): string {
  let out = '';
  for (;;) {
    const nl = s.indexOf('\r\n');
    const size = parseInt(s.slice(0, nl), 16);
    if (!size) return out;
    out += s.slice(nl + 2, nl + 2 + size);
    s = s.slice(nl + 2 + size + 2);
  }
}

export const newOwner = (): string => randomUUID();
