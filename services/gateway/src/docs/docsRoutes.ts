import { randomBytes } from 'node:crypto';
import { Router, type Response } from 'express';
import { ApiDescription } from './ApiDescription';
import { referencePage, referencePolicy } from './referencePage';
import type { StaticAsset } from './StaticAsset';
import { SwaggerUi } from './SwaggerUi';

const YAML_URL = '/openapi.yaml';
const JSON_URL = '/openapi.json';

/**
 * GET /openapi.yaml, /openapi.json (the checked-in description), /docs (it, rendered by Swagger UI
 * in the reader's browser) and /docs/assets/* (Swagger UI's files, served from the gateway
 * itself, so the page works with no internet access).
 */
export function docsRoutes(
  description: ApiDescription = ApiDescription.fromFile(),
  ui: SwaggerUi = SwaggerUi.load(JSON_URL),
): Router {
  const router = Router();
  const title = description.document.info?.title ?? 'API';

  router.get(YAML_URL, (_req, res) => {
    res
      .type('application/yaml; charset=utf-8')
      .set({ 'Cache-Control': 'public, max-age=300', 'X-Content-Type-Options': 'nosniff' })
      .send(description.yaml);
  });
  router.get(JSON_URL, (_req, res) => {
    res
      .type('application/json; charset=utf-8')
      .set({ 'Cache-Control': 'public, max-age=300', 'X-Content-Type-Options': 'nosniff' })
      .send(description.json);
  });

  router.get(['/docs', '/docs/'], (_req, res) => {
    // A new nonce for every response, so the page is never stored by a cache.
    const nonce = randomBytes(16).toString('base64');
    res
      .type('text/html; charset=utf-8')
      .set({
        'Content-Security-Policy': referencePolicy(nonce),
        'X-Content-Type-Options': 'nosniff',
        'Referrer-Policy': 'no-referrer',
        'Cache-Control': 'no-store',
      })
      .send(referencePage(title, ui, { yaml: YAML_URL, json: JSON_URL }, nonce));
  });

  for (const asset of ui.assets) {
    router.get(asset.path, (req, res, next) => {
      void sendAsset(asset, req.acceptsEncodings('gzip') === 'gzip', res).catch(next);
    });
  }
  return router;
}

async function sendAsset(asset: StaticAsset, gzip: boolean, res: Response): Promise<void> {
  res.set({
    'Content-Type': asset.contentType,
    'X-Content-Type-Options': 'nosniff',
    // The URL names the content: a new Swagger UI (or new settings) is a new URL.
    'Cache-Control': 'public, max-age=31536000, immutable',
    'Cross-Origin-Resource-Policy': 'same-origin',
    ETag: gzip ? asset.etag.gzip : asset.etag.identity,
    Vary: 'Accept-Encoding',
  });
  if (gzip) res.set('Content-Encoding', 'gzip');
  res.send(gzip ? await asset.gzipped() : asset.body);
}
