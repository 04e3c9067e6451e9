// The API contract (services/gateway/openapi.yaml) as a checker of real answers. The HTTP helpers
// (http.ts `call` and `rawRequest`, clients.ts `send`, and signin.ts through `call`) hand every
// answer to `recordExchange`; while a recording is on (the contract test's), each is kept and
// later checked: its status is documented for its operation, its body matches the response
// schema (ajv, JSON Schema 2020-12 as OpenAPI 3.1 uses), its documented headers are there and
// well-formed. The report also names the operations and statuses no answer exercised.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { dereference } from '@readme/openapi-parser';
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { parse } from 'yaml';

export const OPENAPI_FILE = join(__dirname, '..', '..', 'services', 'gateway', 'openapi.yaml');

/** One answer as a helper saw it. */
export interface Exchange {
  method: string;
  url: string;
  status: number;
  /** Lower-case names; several values joined with ', '. */
  headers: Record<string, string>;
  body: Buffer;
}

let recording: Exchange[] | null = null;

/** Keeps every answer the helpers see from now on (bodies up to 64 KiB; larger ones are cut). */
export function startRecording(): Exchange[] {
  recording = [];
  return recording;
}

export function stopRecording(): void {
  recording = null;
}

const KEPT_BODY = 512 * 1024;

/** Called by the HTTP helpers for each answer; does nothing unless a recording is on. */
export function recordExchange(
  method: string,
  url: string,
  status: number,
  headers: Headers | Record<string, string | string[] | undefined>,
  body: Buffer | string,
): void {
  if (recording === null) return;
  const flat: Record<string, string> = {};
  if (headers instanceof Headers) headers.forEach((value, name) => (flat[name] = value));
  else
    for (const [name, value] of Object.entries(headers))
      if (value !== undefined) flat[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
  const bytes = typeof body === 'string' ? Buffer.from(body, 'latin1') : body;
  recording.push({
    method: method.toUpperCase(),
    url,
    status,
    headers: flat,
    body: bytes.length > KEPT_BODY ? bytes.subarray(0, KEPT_BODY) : bytes,
  });
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a dereferenced OpenAPI document
type Node = any;
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

export interface Operation {
  method: string;
  path: string;
  operationId: string;
  responses: Record<string, Node>;
  matches: (pathname: string) => boolean;
}

export interface Finding {
  exchange: string;
  problem: string;
}

/** The description, dereferenced, with a schema validator per response body and header. */
export class Contract {
  private readonly ajv = new Ajv2020({ strict: false, allErrors: true });
  private readonly validators = new Map<Node, ValidateFunction>();
  /** `operationId status` → how many answers were seen. */
  readonly seen = new Map<string, number>();

  private constructor(readonly operations: Operation[]) {
    addFormats(this.ajv);
  }

  static async load(file = OPENAPI_FILE): Promise<Contract> {
    const doc: Node = await dereference(parse(readFileSync(file, 'utf8')));
    const operations: Operation[] = [];
    for (const [path, item] of Object.entries(doc.paths as Record<string, Node>)) {
      // Path parameters match one segment; the sign-in and session paths take any v5.x.
      const pattern = path
        .replace(/[.*+?^$()|[\]\\]/g, '\\$&')
        .replace(/\\\{[^}]+\\\}|\{[^}]+\}/g, '[^/]+')
        .replace(/^\/(auth|sessions)\/v5\\\.13\//, '/$1/v5\\.\\d+/');
      const re = new RegExp(`^${pattern}$`);
      for (const method of METHODS.filter((m) => item[m])) {
        operations.push({
          method: method.toUpperCase(),
          path,
          operationId: item[method].operationId,
          responses: item[method].responses,
          matches: (p) => re.test(p),
        });
      }
    }
    return new Contract(operations);
  }

  operationFor(method: string, pathname: string): Operation | undefined {
    return this.operations.find((o) => o.method === method && o.matches(pathname));
  }

  private validator(schema: Node): ValidateFunction {
    let v = this.validators.get(schema);
    if (!v) {
      v = this.ajv.compile(schema);
      this.validators.set(schema, v);
    }
    return v;
  }

  /** What is wrong with one answer, per the description (empty: it conforms). */
  check(e: Exchange): string[] {
    const { pathname } = new URL(e.url);
    const op = this.operationFor(e.method, pathname);
    if (!op) return [`${e.method} ${pathname} is not described`];
    const key = `${op.operationId} ${e.status}`;
    this.seen.set(key, (this.seen.get(key) ?? 0) + 1);
    const response = op.responses[String(e.status)];
    if (!response)
      return [
        `status ${e.status} is not documented for ${op.operationId} (documented: ${Object.keys(op.responses).join(', ')})`,
      ];
    const problems: string[] = [];
    for (const [name, header] of Object.entries((response.headers ?? {}) as Record<string, Node>)) {
      const value = e.headers[name.toLowerCase()];
      if (value === undefined) {
        if (header.required) problems.push(`the required header ${name} is missing`);
        continue;
      }
      const schema = header.schema ?? {};
      const typed = schema.type === 'integer' && /^-?\d+$/.test(value) ? Number(value) : value;
      const v = this.validator(schema);
      if (!v(typed)) problems.push(`header ${name}: ${JSON.stringify(value)} ${this.ajv.errorsText(v.errors)}`);
    }
    const content = response.content as Record<string, Node> | undefined;
    const contentType = e.headers['content-type'];
    if (e.method === 'HEAD') return problems;
    if (!content) {
      if (e.body.length > 0) problems.push(`a body (${e.body.length} bytes, ${contentType}) where none is documented`);
      return problems;
    }
    const mediaType = Object.keys(content).find((m) => m === '*/*' || sameMediaType(m, contentType));
    if (!mediaType)
      return [
        ...problems,
        `Content-Type ${JSON.stringify(contentType)} is not one of ${Object.keys(content).join(', ')}`,
      ];
    const schema = content[mediaType].schema;
    if (!schema || !/json/.test(mediaType)) return problems;
    let body: unknown;
    try {
      body = JSON.parse(e.body.toString('utf8'));
    } catch {
      return [...problems, `the body is not JSON: ${JSON.stringify(e.body.toString('utf8').slice(0, 100))}`];
    }
    const v = this.validator(schema);
    if (!v(body)) problems.push(`body ${JSON.stringify(body).slice(0, 300)}: ${this.ajv.errorsText(v.errors)}`);
    return problems;
  }

  /** Every (operation, status) the description documents that no checked answer had. */
  unexercised(): { operationId: string; method: string; path: string; statuses: string[] }[] {
    return this.operations
      .map((o) => ({
        operationId: o.operationId,
        method: o.method,
        path: o.path,
        statuses: Object.keys(o.responses).filter((s) => !this.seen.has(`${o.operationId} ${s}`)),
      }))
      .filter((o) => o.statuses.length > 0);
  }
}

/**
 * `application/json; charset=utf-8` and `application/json;charset=UTF-8` are the same; a documented
 * type without parameters (`application/json`) covers the same type with any (a charset).
 */
function sameMediaType(documented: string, sent: string | undefined): boolean {
  const norm = (m: string) => m.toLowerCase().replace(/\s+/g, '');
  if (sent === undefined) return false;
  if (!documented.includes(';')) return norm(documented) === norm(sent.split(';')[0]!);
  return norm(documented) === norm(sent);
}
