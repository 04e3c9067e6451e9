/** Which upstream serves a path; internal endpoints are never routed. */
export type Upstream = 'content' | 'auth' | 'sessions';

const ROUTES: [RegExp, Upstream][] = [
  [/^\/v1(\/|$)/, 'content'],
  [/^\/auth\/v5\.\d+(\/|$)/, 'auth'],
  [/^\/sessions\/v5\.\d+(\/|$)/, 'sessions'],
];

export function upstreamFor(path: string): Upstream | null {
  if (/^\/internal(\/|$)/i.test(path) || /(^|\/)internal(\/|$)/i.test(path)) return null;
  return apiOf(path);
}

/** Which API a path is under, routed or not: its refusals take that API's error format. */
export function apiOf(path: string): Upstream | null {
  for (const [pattern, upstream] of ROUTES) if (pattern.test(path)) return upstream;
  return null;
}

const UUID = '[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}';
const ROUTE_LABELS: [RegExp, string][] = [
  [new RegExp(`^/v1/${UUID}/contents/?$`), '/v1/:ownerId/contents'],
  [new RegExp(`^/v1/${UUID}/contents/${UUID}/?$`), '/v1/:ownerId/contents/:contentId'],
  [new RegExp(`^/v1/${UUID}/contents/${UUID}/receipt/?$`), '/v1/:ownerId/contents/:contentId/receipt'],
  [new RegExp(`^/v1/${UUID}/contents/${UUID}/direct-parts/?$`), '/v1/:ownerId/contents/:contentId/direct-parts'],
  [
    new RegExp(`^/v1/${UUID}/contents/${UUID}/direct-parts/[0-9]{1,6}/?$`),
    '/v1/:ownerId/contents/:contentId/direct-parts/:part',
  ],
  [new RegExp(`^/v1/${UUID}/webhooks/?$`), '/v1/:ownerId/webhooks'],
  [new RegExp(`^/v1/${UUID}/webhooks/${UUID}/?$`), '/v1/:ownerId/webhooks/:webhookId'],
  [/^\/auth\/v5\.\d+\/authenticate-by-cert\/?$/, '/auth/v5.x/authenticate-by-cert'],
  [/^\/auth\/v5\.\d+\/approve-cert\/?$/, '/auth/v5.x/approve-cert'],
  [/^\/sessions\/v5\.\d+\/sessions\/refresh\/?$/, '/sessions/v5.x/sessions/refresh'],
  [/^\/(healthz|readyz|metrics|docs|openapi\.yaml|openapi\.json)$/, ''],
];

/**
 * The metrics label of a request's route: one of a fixed set, or "other". Never a piece of the
 * path itself, which any client chooses (unbounded label values).
 */
export function routeLabel(path: string): string {
  for (const [pattern, label] of ROUTE_LABELS) if (pattern.test(path)) return label || path;
  return 'other';
}
