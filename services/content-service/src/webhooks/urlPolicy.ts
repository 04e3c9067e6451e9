import { BlockList, isIP } from 'node:net';

/** Which receiver URLs are accepted; production: https to public addresses only. */
export interface UrlPolicy {
  /** Accept http:// (the local stack, tests). */
  allowHttp: boolean;
  /** Accept loopback, link-local, private and unique-local addresses (the local stack, tests). */
  allowPrivate: boolean;
  /** The longest URL accepted. */
  maxLength: number;
}

export const DEFAULT_URL_POLICY: UrlPolicy = { allowHttp: false, allowPrivate: false, maxLength: 2048 };

/** Addresses no webhook may reach unless allowPrivate: not the public internet. */
const NOT_PUBLIC = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8], // "this" network
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local (and cloud metadata endpoints)
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15], // benchmarking
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
] as const)
  NOT_PUBLIC.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of [
  ['::', 128], // unspecified
  ['::1', 128], // loopback
  ['100::', 64], // discard
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['fc00::', 7], // unique-local
  ['ff00::', 8], // multicast
] as const)
  NOT_PUBLIC.addSubnet(net, prefix, 'ipv6');

/** Whether an IP address (v4 or v6) is on the public internet; IPv4 carried in IPv6 is judged as IPv4. */
export function isPublicAddress(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, '');
  const family = isIP(bare);
  if (family === 4) return !NOT_PUBLIC.check(bare, 'ipv4');
  if (family !== 6) return false;
  const groups = expandIpv6(bare);
  if (!groups) return false;
  const embedded = embeddedIpv4(groups);
  if (embedded) return isPublicAddress(embedded);
  return !NOT_PUBLIC.check(bare, 'ipv6');
}

/** The eight 16-bit groups of an IPv6 address (a trailing dotted IPv4 included), or null. */
function expandIpv6(address: string): number[] | null {
  let text = address.toLowerCase().split('%')[0]!;
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted[1]!.split('.').map(Number) as [number, number, number, number];
    text = text.slice(0, -dotted[1]!.length) + `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.includes('::') ? text.split('::') : [text, null];
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const missing = 8 - left.length - right.length;
  if (tail === null ? missing !== 0 : missing < 1) return null;
  const groups = [...left, ...Array<string>(tail === null ? 0 : missing).fill('0'), ...right].map((g) =>
    parseInt(g, 16),
  );
  return groups.length === 8 && groups.every((g) => g >= 0 && g <= 0xffff) ? groups : null;
}

/**
 * The IPv4 address an IPv6 one stands for: IPv4-mapped (::ffff:a.b.c.d), IPv4-translated
 * (::ffff:0:a.b.c.d), IPv4-compatible, NAT64 (64:ff9b::/96 and the local-use 64:ff9b:1::/48),
 * 6to4 (2002:AABB:CCDD::/48, the IPv4 in groups 1 and 2).
 */
function embeddedIpv4(g: number[]): string | null {
  const at = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
  const v4 = () => at(g[6]!, g[7]!);
  const zeroUpTo = (n: number) => g.slice(0, n).every((x) => x === 0);
  if (zeroUpTo(5) && g[5] === 0xffff) return v4();
  if (zeroUpTo(4) && g[4] === 0xffff && g[5] === 0) return v4();
  if (zeroUpTo(6) && (g[6] !== 0 || g[7]! > 1)) return v4();
  if (g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0)) return v4();
  if (g[0] === 0x64 && g[1] === 0xff9b && g[2] === 1) return v4();
  if (g[0] === 0x2002) return at(g[1]!, g[2]!);
  return null;
}

/** Why a receiver URL is refused (a sentence for the caller), or null when it is accepted. */
export function refuseUrl(raw: string, policy: UrlPolicy): string | null {
  if (raw.length > policy.maxLength) return `the url is longer than ${policy.maxLength} characters`;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'the url is not an absolute URL';
  }
  if (url.protocol !== 'https:' && !(policy.allowHttp && url.protocol === 'http:'))
    return policy.allowHttp ? 'the url must be https:// or http://' : 'the url must be https://';
  if (url.username || url.password) return 'the url may not carry a user name or password';
  if (url.hash) return 'the url may not carry a fragment';
  // A name's trailing dot (its root) names the same host: `localhost.` is `localhost`.
  const host = url.hostname.replace(/^\[|\]$/g, '').replace(/\.$/, '');
  if (policy.allowPrivate) return null;
  if (host === 'localhost' || host.endsWith('.localhost')) return 'the url names a loopback host';
  if (isIP(host) && !isPublicAddress(host))
    return 'the url names a loopback, link-local, private or unique-local address';
  return null;
}

/** Whether a resolved address may be connected to under the policy (checked again at each delivery). */
export function mayConnect(address: string, policy: UrlPolicy): boolean {
  return policy.allowPrivate || isPublicAddress(address);
}
