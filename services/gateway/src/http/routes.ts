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

interface PathParameter {
  name?: string;
  in?: string;
  schema?: { type?: string; format?: string };
  $ref?: string;
}

/**
 * The metrics labels of the API's routes, taken from the paths of its OpenAPI description
 * (openapi.yaml), the one place the routes are declared: `/v1/{ownerId}/contents` is labelled
 * `/v1/:ownerId/contents`, a versioned path (`/auth/v5.13/...`) takes any minor version and the
 * label `v5.x`. A UUID parameter matches a UUID only, an integer one at most six digits.
 */
export class RouteLabels {
  private constructor(private readonly table: readonly [RegExp, string][]) {}

  static fromDescription(document: Record<string, unknown>): RouteLabels {
    const paths = (document.paths ?? {}) as Record<string, Record<string, unknown>>;
    const shared = ((document.components as { parameters?: unknown } | undefined)?.parameters ?? {}) as Record<
      string,
      PathParameter
    >;
    const resolve = (p: PathParameter): PathParameter =>
      p.$ref ? (shared[p.$ref.replace('#/components/parameters/', '')] ?? {}) : p;
    const table: [RegExp, string][] = [];
    for (const [template, item] of Object.entries(paths)) {
      const declared = [
        item.parameters,
        ...Object.values(item).map((op) => (op as { parameters?: unknown })?.parameters),
      ]
        .filter(Array.isArray)
        .flat()
        .map((p) => resolve(p as PathParameter))
        .filter((p) => p.in === 'path' && p.name);
      const schemaOf = (name: string) => declared.find((p) => p.name === name)?.schema ?? {};
      const pattern: string[] = [];
      const label: string[] = [];
      for (const segment of template.split('/').slice(1)) {
        const parameter = /^\{([A-Za-z]+)\}$/.exec(segment)?.[1];
        if (parameter) {
          const schema = schemaOf(parameter);
          pattern.push(schema.format === 'uuid' ? UUID : schema.type === 'integer' ? '[0-9]{1,6}' : '[^/]+');
          label.push(`:${parameter}`);
        } else if (/^v\d+\.\d+$/.test(segment)) {
          pattern.push(`${segment.split('.')[0]}\\.\\d+`);
          label.push(`${segment.split('.')[0]}.x`);
        } else {
          pattern.push(segment.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
          label.push(segment);
        }
      }
      table.push([new RegExp(`^/${pattern.join('/')}/?$`), `/${label.join('/')}`]);
    }
    return new RouteLabels(table);
  }

  /**
   * The metrics label of a request's route: one of the description's paths, or "other". Never a
   * piece of the path itself, which any client chooses (unbounded label values).
   */
  label(path: string): string {
    for (const [pattern, label] of this.table) if (pattern.test(path)) return label;
    return 'other';
  }
}
