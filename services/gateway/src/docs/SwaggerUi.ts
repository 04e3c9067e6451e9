import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { StaticAsset } from './StaticAsset';

/**
 * What the reference page is rendered with: Swagger UI's browser bundle and stylesheet, read from
 * the installed swagger-ui-dist package at start-up (never from a CDN), and the small script
 * that starts it with this gateway's settings. All three are served by the gateway itself.
 */
export class SwaggerUi {
  constructor(
    readonly bundle: StaticAsset,
    readonly stylesheet: StaticAsset,
    readonly initializer: StaticAsset,
  ) {}

  get assets(): StaticAsset[] {
    return [this.bundle, this.stylesheet, this.initializer];
  }

  /** @param descriptionUrl where the page fetches the description from (same origin). */
  static load(
    descriptionUrl: string,
    packageDir = dirname(require.resolve('swagger-ui-dist/package.json')),
  ): SwaggerUi {
    const read = (file: string) => readFileSync(join(packageDir, file));
    return new SwaggerUi(
      new StaticAsset('swagger-ui-bundle', 'js', 'text/javascript; charset=utf-8', read('swagger-ui-bundle.js')),
      new StaticAsset('swagger-ui', 'css', 'text/css; charset=utf-8', read('swagger-ui.css')),
      new StaticAsset(
        'swagger-ui-init',
        'js',
        'text/javascript; charset=utf-8',
        Buffer.from(initializer(descriptionUrl)),
      ),
    );
  }
}

/**
 * A script file rather than an inline one, so that the page's policy allows no inline script.
 * The reference is read-only: no "Try it out" (the page would send requests with the reader's
 * cookies), no online validator (validatorUrl: null; it would send the description's address to
 * a third party), and no `?url=` or `?configUrl=` taken from the page's address.
 */
function initializer(descriptionUrl: string): string {
  const options = {
    url: descriptionUrl,
    dom_id: '#swagger-ui',
    deepLinking: true,
    displayOperationId: true,
    defaultModelsExpandDepth: 1,
    defaultModelExpandDepth: 3,
    supportedSubmitMethods: [],
    tryItOutEnabled: false,
    validatorUrl: null,
    queryConfigEnabled: false,
  };
  return `window.ui = SwaggerUIBundle(${JSON.stringify(options)});\n`;
}
