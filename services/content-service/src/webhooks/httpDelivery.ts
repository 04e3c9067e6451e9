import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { mayConnect, refuseUrl, type UrlPolicy } from './urlPolicy';

/** A delivery that never reached a receiver's answer (refused address, DNS, connection, timeout). */
export class DeliveryFailed extends Error {
  override readonly name = 'DeliveryFailed';
  readonly code = 'CP_ERR_DELIVERY_FAILED';
}

/** How much of a receiver's answer is read (and dropped) before the connection is closed. */
const ANSWER_BYTES_READ = 64 * 1024;

/**
 * POSTs a body to a receiver and answers its status. The URL is checked against the policy, and
 * the address its name resolves to is checked again and is the one connected to (a name that
 * resolved to a public address at registration may point anywhere now: DNS rebinding). The whole
 * exchange (connect, TLS, answer) is bounded by `timeoutMs`.
 */
export async function postToReceiver(
  url: string,
  headers: Record<string, string>,
  body: string,
  policy: UrlPolicy,
  timeoutMs: number,
): Promise<number> {
  const refused = refuseUrl(url, { ...policy, maxLength: Infinity });
  if (refused) throw new DeliveryFailed(refused);
  const target = new URL(url);
  const host = target.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host) && !mayConnect(host, policy)) throw new DeliveryFailed('the receiver address is not public');
  const lookup: LookupFunction = (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses: LookupAddress[]) => {
      if (error) return callback(error, '', 0);
      const allowed = addresses.filter((a) => mayConnect(a.address, policy));
      if (allowed.length === 0) return callback(new DeliveryFailed(`${hostname} resolves to no public address`), '', 0);
      if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, allowed);
      return callback(null, allowed[0]!.address, allowed[0]!.family);
    });
  };
  const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
  const payload = Buffer.from(body);
  return new Promise<number>((resolve, reject) => {
    const req = send(target, {
      method: 'POST',
      headers: { ...headers, 'Content-Length': String(payload.length) },
      lookup,
      agent: false,
      signal: AbortSignal.timeout(timeoutMs),
    });
    req.on('response', (res: IncomingMessage) => {
      let read = 0;
      res.on('data', (chunk: Buffer) => {
        read += chunk.length;
        if (read > ANSWER_BYTES_READ) res.destroy();
      });
      res.on('close', () => resolve(res.statusCode ?? 0));
      res.on('error', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', (error) => reject(new DeliveryFailed(error.message, { cause: error })));
    req.end(payload);
  });
}
