import { Router } from 'express';
import { ApiDescription } from './ApiDescription';
import { renderReference } from './renderReference';

/**
 * GET /openapi.yaml, /openapi.json (the checked-in description) and /docs (it, as a readable
 * page). Rendered once; the page has no scripts, so its policy forbids them.
 */
export function docsRoutes(description: ApiDescription = ApiDescription.fromFile()): Router {
  const router = Router();
  const html = renderReference(description.document);
  router.get('/openapi.yaml', (_req, res) => {
    res.type('application/yaml; charset=utf-8').set('Cache-Control', 'public, max-age=300').send(description.yaml);
  });
  router.get('/openapi.json', (_req, res) => {
    res.type('application/json; charset=utf-8').set('Cache-Control', 'public, max-age=300').send(description.json);
  });
  router.get(['/docs', '/docs/'], (_req, res) => {
    res
      .type('text/html; charset=utf-8')
      .set(
        'Content-Security-Policy',
        "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
      )
      .set('X-Content-Type-Options', 'nosniff')
      .set('Cache-Control', 'public, max-age=300')
      .send(html);
  });
  return router;
}
