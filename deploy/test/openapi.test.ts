// The checked-in OpenAPI description (services/gateway/openapi.yaml, served by the gateway at
// /openapi.yaml and rendered at /docs) is valid OpenAPI 3.1 and describes every public endpoint.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { validate } from '@readme/openapi-parser';
import { parse } from 'yaml';
import { upstreamFor } from '../../services/gateway/src/http/routes';
import { ROOT } from './support/render';

const FILE = join(ROOT, 'services', 'gateway', 'openapi.yaml');
const doc = parse(readFileSync(FILE, 'utf8'));
const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
/** Served by the gateway itself rather than proxied. */
const GATEWAY_OWN = ['/healthz', '/openapi.yaml', '/openapi.json', '/docs'];

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- an OpenAPI document
type Node = any;
const operations: { path: string; method: string; op: Node }[] = Object.entries(
  doc.paths as Record<string, Node>,
).flatMap(([path, item]) => METHODS.filter((m) => item[m]).map((method) => ({ path, method, op: item[method] })));
const deref = (node: Node): Node => {
  let n = node;
  while (n?.$ref)
    n = (n.$ref as string)
      .replace(/^#\//, '')
      .split('/')
      .reduce((o: Node, k: string) => o?.[k], doc);
  return n;
};
const op = (method: string, path: string): Node => {
  const found = doc.paths[path]?.[method];
  if (!found) throw new Error(`${method.toUpperCase()} ${path} is not described`);
  return found;
};
const statuses = (o: Node) => Object.keys(o.responses);
const bodySchemaRef = (response: Node): string | undefined => {
  const content = deref(response).content;
  return content ? (Object.values(content)[0] as Node).schema?.$ref : undefined;
};

describe('services/gateway/openapi.yaml', () => {
  it('is a valid OpenAPI 3.1 description (@readme/openapi-parser), without warnings', async () => {
    expect(doc.openapi).toMatch(/^3\.1\.\d+$/);
    const result = await validate(structuredClone(doc));
    expect(result).toEqual(expect.objectContaining({ valid: true, warnings: [] }));
  });

  it('describes the content API: Upload, UploadByParts, Download, the resume status and the receipt', () => {
    expect(op('post', '/v1/{ownerId}/contents').operationId).toBe('Upload');
    expect(op('put', '/v1/{ownerId}/contents/{contentId}').operationId).toBe('UploadByParts');
    expect(op('get', '/v1/{ownerId}/contents/{contentId}').operationId).toBe('Download');
    const receipt = op('get', '/v1/{ownerId}/contents/{contentId}/receipt');
    expect(receipt.operationId).toBe('Receipt');
    expect(Object.keys(receipt.responses['200'].content)).toEqual(['application/pkcs7-mime; smime-type=signed-data']);
    expect(doc.components.schemas.ContentReceipt.required).toEqual(
      expect.arrayContaining(['content-id', 'owner-id', 'size', 'digests', 'issued']),
    );
    const head = op('head', '/v1/{ownerId}/contents/{contentId}');
    const headers = head.responses['200'].headers;
    expect(headers['X-Upload-State'].schema.enum).toEqual(['uploading', 'ready']);
    expect(headers['X-Upload-State'].required).toBe(true);
    expect(headers['X-Content-Total']).toBeDefined();
    expect(headers['X-Received-Ranges'].required).toBe(true);
  });

  it('describes sign-in and session refresh', () => {
    op('post', '/auth/v5.13/authenticate-by-cert');
    op('post', '/auth/v5.13/approve-cert');
    op('post', '/sessions/v5.13/sessions/refresh');
  });

  it('documents the /v1 error statuses on each content operation, with the ContentsError body', () => {
    const expected: Record<string, string[]> = {
      'post /v1/{ownerId}/contents': ['201', '400', '401', '403', '409', '411', '413', '503'],
      'put /v1/{ownerId}/contents/{contentId}': ['200', '201', '400', '401', '403', '404', '409', '411', '413', '503'],
      'get /v1/{ownerId}/contents/{contentId}': ['200', '206', '400', '401', '403', '404', '409', '416', '503'],
      'get /v1/{ownerId}/contents/{contentId}/receipt': ['200', '400', '401', '403', '404', '409', '501', '503'],
    };
    for (const [key, codes] of Object.entries(expected)) {
      const [method, path] = key.split(' ') as [string, string];
      const o = op(method, path);
      expect({ key, statuses: statuses(o) }).toEqual({ key, statuses: expect.arrayContaining(codes) });
      for (const status of statuses(o).filter((s) => Number(s) >= 400)) {
        expect({ key, status, body: bodySchemaRef(o.responses[status]) }).toEqual({
          key,
          status,
          body: '#/components/schemas/ContentsError',
        });
      }
    }
    const error = doc.components.schemas.ContentsError;
    expect(error.required).toEqual(['id', 'status-code', 'message', 'track-id']);
  });

  it('gives /auth and /sessions errors the {"Code","Message"} body', () => {
    for (const { path, method, op: o } of operations.filter((x) => /^\/(auth|sessions)\//.test(x.path))) {
      for (const status of statuses(o).filter((s) => Number(s) >= 400)) {
        expect({ path, method, status, body: bodySchemaRef(o.responses[status]) }).toEqual({
          path,
          method,
          status,
          body: '#/components/schemas/CodeError',
        });
      }
    }
    expect(doc.components.schemas.CodeError.required).toEqual(['Code', 'Message']);
  });

  it('documents Retry-After on every 503 of the API (not on the pages the gateway serves itself)', () => {
    for (const { path, method, op: o } of operations) {
      if (!o.responses['503'] || GATEWAY_OWN.includes(path)) continue;
      expect({ path, method, retryAfter: Boolean(deref(o.responses['503']).headers?.['Retry-After']) }).toEqual({
        path,
        method,
        retryAfter: true,
      });
    }
  });

  it('names every operation once and gives it a summary', () => {
    const ids = operations.map((o) => o.op.operationId);
    expect(ids.every((id) => typeof id === 'string' && id.length > 0)).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    for (const { op: o } of operations) expect(o.summary).toMatch(/\S/);
  });

  it('describes only paths the gateway serves or routes, and no internal endpoint', () => {
    for (const path of Object.keys(doc.paths)) {
      expect(path).not.toMatch(/internal/i);
      const concrete = path.replace(/\{[^}]+\}/g, '00000000-0000-4000-8000-000000000000');
      expect({ path, served: GATEWAY_OWN.includes(path) || upstreamFor(concrete) !== null }).toEqual({
        path,
        served: true,
      });
    }
  });
});
