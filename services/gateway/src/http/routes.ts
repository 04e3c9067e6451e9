/** Which upstream serves a path; internal endpoints are never routed. */
export type Upstream = 'content' | 'auth' | 'sessions';

const ROUTES: [RegExp, Upstream][] = [
  [/^\/v1(\/|$)/, 'content'],
  [/^\/auth\/v5\.\d+(\/|$)/, 'auth'],
  [/^\/sessions\/v5\.\d+(\/|$)/, 'sessions'],
];

export function upstreamFor(path: string): Upstream | null {
  if (/^\/internal(\/|$)/i.test(path) || /(^|\/)internal(\/|$)/i.test(path)) return null;
  for (const [pattern, upstream] of ROUTES) if (pattern.test(path)) return upstream;
  return null;
}
