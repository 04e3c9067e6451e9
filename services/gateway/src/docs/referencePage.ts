import type { SwaggerUi } from './SwaggerUi';

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

/**
 * The policy of the /docs page. Scripts: only the two tags that carry this response's nonce
 * (not 'self': the gateway also serves stored contents, with the type their uploader chose); no
 * 'unsafe-eval', no 'unsafe-inline'. Styles: only the stylesheet file (Swagger UI sets no inline
 * style the policy would have to allow). Images: its icons are data: SVGs. Everything else it
 * loads (the description) comes from the gateway itself.
 */
export function referencePolicy(nonce: string): string {
  return [
    "default-src 'self'",
    `script-src 'nonce-${nonce}'`,
    "style-src 'self'",
    "img-src 'self' data:",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/** The /docs page: a shell that Swagger UI fills in from the description. */
export function referencePage(
  title: string,
  ui: SwaggerUi,
  descriptionUrls: { yaml: string; json: string },
  nonce: string,
): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)} — API reference</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${ui.stylesheet.path}">
</head>
<body>
<noscript>This page needs JavaScript. The description itself: <a href="${descriptionUrls.yaml}">openapi.yaml</a>, <a href="${descriptionUrls.json}">openapi.json</a>.</noscript>
<div id="swagger-ui"></div>
<script nonce="${nonce}" src="${ui.bundle.path}"></script>
<script nonce="${nonce}" src="${ui.initializer.path}"></script>
</body>
</html>
`;
}
