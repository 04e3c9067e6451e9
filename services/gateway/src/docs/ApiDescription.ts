import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';

/** Where the checked-in description lives: the gateway package's root, beside package.json (also in the image). */
export const API_DESCRIPTION_FILE = join(__dirname, '..', '..', 'openapi.yaml');

/** The OpenAPI description in the three forms the gateway serves; built once, at start-up. */
export class ApiDescription {
  readonly json: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- an OpenAPI document, read field by field by the renderer
  readonly document: any;

  constructor(readonly yaml: string) {
    this.document = parse(yaml);
    this.json = JSON.stringify(this.document);
  }

  static fromFile(file = API_DESCRIPTION_FILE): ApiDescription {
    return new ApiDescription(readFileSync(file, 'utf8'));
  }
}
