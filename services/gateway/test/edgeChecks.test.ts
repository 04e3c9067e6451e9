import type { Request } from 'express';
import fc from 'fast-check';
import { parseContentRange } from '@cp/protocol';
import { refusalOf } from '../src/http/edgeChecks';
import { ApiDescription } from '../src/docs/ApiDescription';
import { RouteLabels } from '../src/http/routes';

const OWNER = '11111111-1111-4111-8111-111111111111';

/** A request head as express sees it (only what refusalOf reads). */
function head(method: string, url: string, headers: [string, string][]): Request {
  const lower: Record<string, string> = {};
  for (const [k, v] of headers) lower[k.toLowerCase()] = v;
  return {
    method,
    url,
    path: url.split('?')[0],
    httpVersion: '1.1',
    rawHeaders: headers.flat(),
    headers: lower,
  } as unknown as Request;
}
const refused = (req: Request) => refusalOf(req)?.code ?? null;

describe('refusalOf: what the gateway decides from the head alone', () => {
  it('lets a sound upload through', () => {
    expect(
      refused(
        head('PUT', `/v1/${OWNER}/contents/${OWNER}`, [
          ['Host', 'g'],
          ['Content-Range', 'bytes 0-9/20'],
          ['Content-Length', '10'],
          ['Content-Type', 'text/plain'],
        ]),
      ),
    ).toBeNull();
  });

  it.each([
    [
      'a second Host',
      head('GET', '/healthz', [
        ['Host', 'a'],
        ['Host', 'b'],
      ]),
      'duplicateHost',
    ],
    ['no Host on HTTP/1.1', head('GET', '/healthz', []), 'missingHost'],
    ['//', head('GET', `/v1//${OWNER}/contents`, [['Host', 'g']]), 'invalidPath'],
    ['\\', head('GET', '/sessions/v5.13\\..\\internal', [['Host', 'g']]), 'invalidPath'],
    ['%2e%2e', head('GET', '/v1/%2E%2e/internal', [['Host', 'g']]), 'invalidPath'],
    [
      'non-ASCII Content-Type',
      head('POST', `/v1/${OWNER}/contents`, [
        ['Host', 'g'],
        ['Content-Type', 'text/plain; charset=\xff'],
        ['Content-Length', '1'],
      ]),
      'invalidContentType',
    ],
    [
      '12 KB api key',
      head('POST', `/sessions/v5.13/sessions/refresh?api-key=${'k'.repeat(12288)}`, [['Host', 'g']]),
      'credentialTooLong',
    ],
    [
      'a 2 KB auth.sid cookie',
      head('GET', `/v1/${OWNER}/contents/${OWNER}`, [
        ['Host', 'g'],
        ['Cookie', `theme=dark; auth.sid=${'A'.repeat(2048)}`],
      ]),
      'credentialTooLong',
    ],
    [
      'Content-Length above 64 MiB',
      head('POST', `/v1/${OWNER}/contents`, [
        ['Host', 'g'],
        ['Content-Length', '67108865'],
      ]),
      'partTooLarge',
    ],
    [
      'range of more than 64 MiB',
      head('PUT', `/v1/${OWNER}/contents/${OWNER}`, [
        ['Host', 'g'],
        ['Content-Range', 'bytes 0-67108864/99999999999'],
        ['Transfer-Encoding', 'chunked'],
      ]),
      'partTooLarge',
    ],
    [
      'a > b',
      head('PUT', `/v1/${OWNER}/contents/${OWNER}`, [
        ['Host', 'g'],
        ['Content-Range', 'bytes 9-0/10'],
        ['Content-Length', '10'],
      ]),
      'invalidRange',
    ],
    [
      'length other than the range',
      head('PUT', `/v1/${OWNER}/contents/${OWNER}`, [
        ['Host', 'g'],
        ['Content-Range', 'bytes 0-9/10'],
        ['Content-Length', '11'],
      ]),
      'bodyLengthMismatch',
    ],
    [
      'total above 30 GiB',
      head('PUT', `/v1/${OWNER}/contents/${OWNER}`, [
        ['Host', 'g'],
        ['Content-Range', 'bytes 0-9/32212254721'],
        ['Content-Length', '10'],
      ]),
      'contentTooLarge',
    ],
    ['no length on a write', head('POST', `/v1/${OWNER}/contents`, [['Host', 'g']]), 'lengthRequired'],
    [
      'an unknown Expect',
      head('GET', '/healthz', [
        ['Host', 'g'],
        ['Expect', 'teapot'],
      ]),
      'expectationFailed',
    ],
  ])('refuses %s', (_name, req, code) => {
    expect(refused(req)).toBe(code);
  });
});

it('leaves cookies other than auth.sid alone', () => {
  expect(
    refused(
      head('GET', `/v1/${OWNER}/contents/${OWNER}`, [
        ['Host', 'g'],
        ['Cookie', `pref=caf\xe9; big=${'x'.repeat(9000)}; auth.sid=${'A'.repeat(64)}`],
      ]),
    ),
  ).toBeNull();
});

describe('route labels, from the API description', () => {
  const routes = RouteLabels.fromDescription(ApiDescription.fromFile().document);
  const routeLabel = (path: string) => routes.label(path);

  it('names the API routes and folds every other path into "other"', () => {
    expect(routeLabel(`/v1/${OWNER}/contents`)).toBe('/v1/:ownerId/contents');
    expect(routeLabel(`/v1/${OWNER}/contents/${OWNER}`)).toBe('/v1/:ownerId/contents/:contentId');
    expect(routeLabel(`/v1/${OWNER}/contents/${OWNER}/receipt`)).toBe('/v1/:ownerId/contents/:contentId/receipt');
    expect(routeLabel(`/v1/${OWNER}/contents/${OWNER}/direct-parts`)).toBe(
      '/v1/:ownerId/contents/:contentId/direct-parts',
    );
    expect(routeLabel(`/v1/${OWNER}/contents/${OWNER}/direct-parts/12`)).toBe(
      '/v1/:ownerId/contents/:contentId/direct-parts/:part',
    );
    expect(routeLabel(`/v1/${OWNER}/webhooks`)).toBe('/v1/:ownerId/webhooks');
    expect(routeLabel(`/v1/${OWNER}/webhooks/${OWNER}`)).toBe('/v1/:ownerId/webhooks/:webhookId');
    expect(routeLabel('/sessions/v5.12/sessions/refresh')).toBe('/sessions/v5.x/sessions/refresh');
    expect(routeLabel('/auth/v5.13/authenticate-by-cert')).toBe('/auth/v5.x/authenticate-by-cert');
    expect(routeLabel('/auth/v5.9/approve-cert/')).toBe('/auth/v5.x/approve-cert');
    expect(routeLabel('/healthz')).toBe('/healthz');
    expect(routeLabel('/openapi.json')).toBe('/openapi.json');
    expect(routeLabel('/docs')).toBe('/docs');
    for (const path of [
      '/x1',
      '/random-segment-123',
      '/v1/not-a-uuid/contents',
      '/auth/v5.13/unknown',
      '/auth/v5x13/approve-cert',
      '/openapiXjson',
      `/v1/${OWNER}/contents/${OWNER}/direct-parts/1x`,
      `/v1/${OWNER}/contents/${OWNER}/direct-parts/${'9'.repeat(40)}`,
    ])
      expect(routeLabel(path)).toBe('other');
  });
});

describe('the edge and the content-service read Content-Range alike', () => {
  it('refuses as invalidRange exactly what @cp/protocol cannot parse', () => {
    const piece = fc.oneof(
      fc.constantFrom(
        'bytes ',
        'bytes=',
        'BYTES ',
        'bytes',
        '-',
        '/',
        '*',
        ' ',
        '0',
        '9',
        '10',
        '99999999999999999999',
      ),
      fc.nat(50).map(String),
    );
    fc.assert(
      fc.property(
        fc.array(piece, { maxLength: 7 }).map((parts) => parts.join('')),
        (value) => {
          const req = head('PUT', `/v1/${OWNER}/contents/${OWNER}`, [
            ['Host', 'g'],
            ['Content-Range', value],
            ['Transfer-Encoding', 'chunked'],
          ]);
          let parses = true;
          try {
            parseContentRange(value);
          } catch {
            parses = false;
          }
          const code = refused(req);
          expect({ value, parses, edgeInvalid: code === 'invalidRange' }).toEqual({
            value,
            parses,
            edgeInvalid: !parses,
          });
        },
      ),
      { numRuns: 2000 },
    );
  });
});
