import type { Request } from 'express';

/**
 * The address the outermost trusted proxy saw. Each proxy appends the address it was reached from
 * to X-Forwarded-For, so with `trustedProxyHops` proxies in front of the service (the gateway: 1;
 * an ingress and the gateway: 2) the client is that many entries left of the socket's peer.
 * Entries further left were written by the client and are never used.
 */
export function clientAddress(req: Request, trustedProxyHops: number): string {
  const forwarded = String(req.headers['x-forwarded-for'] ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const chain = [...forwarded, req.socket.remoteAddress ?? 'unknown'];
  const address = chain[Math.max(0, chain.length - 1 - trustedProxyHops)]!;
  return address.startsWith('::ffff:') ? address.slice(7) : address;
}
