// Renders an OpenAPI 3.1 description as one self-contained HTML page: no script, no external
// resource, readable without JavaScript. Covers what this project's description uses: tags,
// operations, parameters ($ref'd or inline), request bodies, responses with headers, security
// schemes and component schemas.

/* eslint-disable @typescript-eslint/no-explicit-any -- walks an arbitrary OpenAPI document */
type Doc = any;

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

export function escapeHtml(text: unknown): string {
  return String(text ?? '').replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/** The little Markdown the description uses: paragraphs, `code`, **bold**. */
function prose(text: unknown): string {
  if (!text) return '';
  return String(text)
    .trim()
    .split(/\n\s*\n/)
    .map(
      (p) =>
        `<p>${escapeHtml(p.replace(/\s*\n\s*/g, ' '))
          .replace(/`([^`]+)`/g, '<code>$1</code>')
          .replace(/\*\*([^*]+)\*\*/g, '<strong>$1</strong>')}</p>`,
    )
    .join('');
}

function inline(text: unknown): string {
  return escapeHtml(text).replace(/`([^`]+)`/g, '<code>$1</code>');
}

function resolve(doc: Doc, node: Doc): Doc {
  let n = node;
  for (let i = 0; n && typeof n.$ref === 'string' && i < 10; i++) {
    const { $ref, ...rest } = n;
    const target = $ref
      .replace(/^#\//, '')
      .split('/')
      .reduce((o: Doc, k: string) => o?.[k.replace(/~1/g, '/').replace(/~0/g, '~')], doc);
    n = { ...target, ...rest };
  }
  return n;
}

function refName(node: Doc): string | null {
  return typeof node?.$ref === 'string' ? node.$ref.split('/').pop()! : null;
}

function schemaSummary(doc: Doc, schema: Doc): string {
  if (!schema) return '';
  const name = refName(schema);
  if (name) return `<a href="#schema-${escapeHtml(name)}">${escapeHtml(name)}</a>`;
  const s = resolve(doc, schema);
  const parts: string[] = [];
  if (s.const !== undefined) parts.push(`<code>${escapeHtml(JSON.stringify(s.const))}</code>`);
  if (s.enum) parts.push(s.enum.map((e: unknown) => `<code>${escapeHtml(e)}</code>`).join(' | '));
  if (s.type) parts.push(escapeHtml(Array.isArray(s.type) ? s.type.join(' | ') : s.type));
  if (s.format) parts.push(`(${escapeHtml(s.format)})`);
  if (s.contentMediaType) parts.push(`(${escapeHtml(s.contentMediaType)})`);
  if (s.pattern) parts.push(`matching <code>${escapeHtml(s.pattern)}</code>`);
  if (s.minimum !== undefined || s.maximum !== undefined) parts.push(`in [${escapeHtml(s.minimum ?? '…')}, ${escapeHtml(s.maximum ?? '…')}]`);
  if (s.default !== undefined) parts.push(`default <code>${escapeHtml(s.default)}</code>`);
  const examples = s.examples ?? (s.example !== undefined ? [s.example] : []);
  if (examples.length)
    parts.push(`e.g. ${examples.map((e: unknown) => `<code>${escapeHtml(typeof e === 'string' ? e : JSON.stringify(e))}</code>`).join(', ')}`);
  return parts.join(' ');
}

function parametersTable(doc: Doc, params: Doc[]): string {
  if (!params.length) return '';
  const rows = params
    .map((p) => resolve(doc, p))
    .map(
      (p) =>
        `<tr><td><code>${escapeHtml(p.name)}</code></td><td>${escapeHtml(p.in)}</td><td>${p.required ? 'required' : 'optional'}</td><td>${schemaSummary(doc, p.schema)}</td><td>${inline(p.description)}</td></tr>`,
    )
    .join('');
  return `<h4>Parameters</h4><table><thead><tr><th>Name</th><th>In</th><th></th><th>Value</th><th>Meaning</th></tr></thead><tbody>${rows}</tbody></table>`;
}

function contentList(doc: Doc, content: Doc): string {
  if (!content) return '';
  return Object.entries(content)
    .map(([type, media]: [string, Doc]) => {
      const example = media.example !== undefined ? ` <span class="example">e.g. <code>${escapeHtml(JSON.stringify(media.example))}</code></span>` : '';
      return `<div><code>${escapeHtml(type)}</code> ${schemaSummary(doc, media.schema)}${example}</div>`;
    })
    .join('');
}

function responsesTable(doc: Doc, responses: Doc): string {
  const rows = Object.entries(responses ?? {})
    .map(([status, raw]) => {
      const r = resolve(doc, raw);
      const headers = Object.entries(r.headers ?? {})
        .map(([name, h]) => {
          const header = resolve(doc, h);
          return `<div class="header"><code>${escapeHtml(name)}</code>${header.required ? ' (always)' : ''}: ${inline(header.description)} ${schemaSummary(doc, header.schema)}</div>`;
        })
        .join('');
      return `<tr class="status-${escapeHtml(status.charAt(0))}xx"><td><strong>${escapeHtml(status)}</strong></td><td>${inline(r.description)}${headers}</td><td>${contentList(doc, r.content)}</td></tr>`;
    })
    .join('');
  return `<h4>Responses</h4><table><thead><tr><th>Status</th><th>Meaning and headers</th><th>Body</th></tr></thead><tbody>${rows}</tbody></table>`;
}

function operationId(method: string, path: string, op: Doc): string {
  return `op-${escapeHtml(op.operationId ?? `${method}-${path.replace(/[^\w]+/g, '-')}`)}`;
}

function renderOperation(doc: Doc, path: string, method: string, op: Doc, pathParams: Doc[]): string {
  const params = [...pathParams, ...(op.parameters ?? [])];
  const security = (op.security ?? doc.security ?? []).flatMap((req: Doc) => Object.keys(req));
  const body = op.requestBody ? resolve(doc, op.requestBody) : null;
  return `<section class="operation" id="${operationId(method, path, op)}">
<h3><span class="method method-${method}">${method.toUpperCase()}</span> <code class="path">${escapeHtml(path)}</code></h3>
<p class="summary">${escapeHtml(op.summary ?? op.operationId ?? '')}${op.operationId ? ` <span class="opid">(${escapeHtml(op.operationId)})</span>` : ''}</p>
${prose(op.description)}
${security.length ? `<p class="security">Credentials: ${security.map((s: string) => `<a href="#security-${escapeHtml(s)}">${escapeHtml(s)}</a>`).join(' or ')}</p>` : ''}
${parametersTable(doc, params)}
${body ? `<h4>Request body${body.required ? '' : ' (optional)'}</h4>${prose(body.description)}${contentList(doc, body.content)}` : ''}
${responsesTable(doc, op.responses)}
</section>`;
}

function renderSchemas(doc: Doc): string {
  const schemas = doc.components?.schemas ?? {};
  return Object.entries(schemas)
    .map(([name, s]: [string, Doc]) => {
      const required = new Set(s.required ?? []);
      const props = Object.entries(s.properties ?? {})
        .map(
          ([p, ps]: [string, Doc]) =>
            `<tr><td><code>${escapeHtml(p)}</code></td><td>${required.has(p) ? 'required' : 'optional'}</td><td>${schemaSummary(doc, ps)}</td><td>${inline(resolve(doc, ps).description)}</td></tr>`,
        )
        .join('');
      return `<section class="schema" id="schema-${escapeHtml(name)}"><h3>${escapeHtml(name)}</h3>${prose(s.description)}${props ? `<table><thead><tr><th>Field</th><th></th><th>Value</th><th>Meaning</th></tr></thead><tbody>${props}</tbody></table>` : `<p>${schemaSummary(doc, s)}</p>`}</section>`;
    })
    .join('\n');
}

function renderSecurity(doc: Doc): string {
  return Object.entries(doc.components?.securitySchemes ?? {})
    .map(([name, s]: [string, Doc]) => {
      const how =
        s.type === 'http'
          ? `HTTP ${escapeHtml(s.scheme)}${s.bearerFormat ? ` (${escapeHtml(s.bearerFormat)})` : ''}`
          : `${escapeHtml(s.in)} <code>${escapeHtml(s.name)}</code>`;
      return `<li id="security-${escapeHtml(name)}"><strong>${escapeHtml(name)}</strong>: ${how}. ${inline(s.description)}</li>`;
    })
    .join('');
}

const STYLE = `
body{font:15px/1.5 system-ui,sans-serif;margin:0;color:#1d232a;background:#fff}
header{background:#1d3557;color:#fff;padding:1.5rem 2rem}header h1{margin:0}header p{margin:.3rem 0 0}
.layout{display:flex;align-items:flex-start}
nav{position:sticky;top:0;max-height:100vh;overflow:auto;min-width:16rem;padding:1rem 1.5rem;border-right:1px solid #ddd;background:#f7f8fa}
nav ul{list-style:none;padding-left:0}nav li{margin:.2rem 0}nav a{text-decoration:none;color:#1d3557}
main{padding:1rem 2rem;max-width:70rem}
.operation,.schema{border:1px solid #ddd;border-radius:6px;padding:.5rem 1rem;margin:1rem 0}
.method{display:inline-block;min-width:4.2rem;text-align:center;border-radius:4px;color:#fff;font-size:.85em;padding:.1rem .4rem}
.method-get{background:#2a7ab0}.method-post{background:#2f8f4e}.method-put{background:#b7791f}.method-head{background:#6b46c1}.method-delete{background:#c53030}
.summary{font-size:1.15em;font-weight:600;margin:.2rem 0}.opid{color:#666;font-weight:400;font-size:.85em}
table{border-collapse:collapse;width:100%;margin:.4rem 0}th,td{border:1px solid #e2e2e2;padding:.3rem .5rem;text-align:left;vertical-align:top}th{background:#f2f4f7}
.status-2xx td:first-child{color:#2f8f4e}.status-4xx td:first-child,.status-5xx td:first-child{color:#c53030}
code{background:#f2f4f7;padding:0 .2rem;border-radius:3px;font-size:.92em}.header{font-size:.92em;margin-top:.2rem}
`;

/** The whole page. */
export function renderReference(doc: Doc): string {
  const byTag = new Map<string, string[]>();
  const navByTag = new Map<string, string[]>();
  for (const [path, item] of Object.entries(doc.paths ?? {}) as [string, Doc][]) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      const tag = op.tags?.[0] ?? 'Other';
      if (!byTag.has(tag)) {
        byTag.set(tag, []);
        navByTag.set(tag, []);
      }
      byTag.get(tag)!.push(renderOperation(doc, path, method, op, item.parameters ?? []));
      navByTag.get(tag)!.push(`<li><a href="#${operationId(method, path, op)}">${escapeHtml(op.summary ?? op.operationId)}</a></li>`);
    }
  }
  const tagDescriptions = new Map<string, string>((doc.tags ?? []).map((t: Doc) => [t.name, t.description]));
  const order = [...(doc.tags ?? []).map((t: Doc) => t.name), ...[...byTag.keys()].filter((t) => !tagDescriptions.has(t))].filter((t) => byTag.has(t));
  const nav = order.map((t) => `<li><strong><a href="#tag-${escapeHtml(t)}">${escapeHtml(t)}</a></strong><ul>${navByTag.get(t)!.join('')}</ul></li>`).join('');
  const sections = order
    .map((t) => `<section id="tag-${escapeHtml(t)}"><h2>${escapeHtml(t)}</h2>${prose(tagDescriptions.get(t))}${byTag.get(t)!.join('\n')}</section>`)
    .join('\n');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><link rel="icon" href="data:,">
<title>${escapeHtml(doc.info?.title)} — API reference</title><style>${STYLE}</style></head>
<body>
<header><h1>${escapeHtml(doc.info?.title)}</h1><p>Version ${escapeHtml(doc.info?.version)} · OpenAPI ${escapeHtml(doc.openapi)} · <a style="color:#fff" href="/openapi.yaml">openapi.yaml</a> · <a style="color:#fff" href="/openapi.json">openapi.json</a></p></header>
<div class="layout">
<nav aria-label="Operations"><ul>${nav}<li><strong><a href="#schemas">Schemas</a></strong></li></ul></nav>
<main>
<section id="overview">${prose(doc.info?.summary)}${prose(doc.info?.description)}</section>
<section id="security"><h2>Credentials</h2><ul>${renderSecurity(doc)}</ul></section>
${sections}
<section id="schemas"><h2>Schemas</h2>${renderSchemas(doc)}</section>
</main></div>
</body></html>
`;
}
