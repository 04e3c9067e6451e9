import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';

/** Where the checked-in description lives: the gateway package's root, beside package.json (also in the image). */
export const API_DESCRIPTION_FILE = join(__dirname, '..', '..', 'openapi.yaml');

/** The few fields of an OpenAPI document the gateway reads itself (the rest is for the reader). */
export interface OpenApiDocument {
  info?: { title?: string; version?: string };
  [field: string]: unknown;
}

/** The OpenAPI description as the gateway serves it (YAML and JSON); built once, at start-up. */
export class ApiDescription {
  readonly json: string;
  readonly document: OpenApiDocument;

  constructor(readonly yaml: string) {
    this.document = parse(yaml);
    this.json = JSON.stringify(this.document);
  }

  static fromFile(file = API_DESCRIPTION_FILE): ApiDescription {
    return new ApiDescription(readFileSync(file, 'utf8'));
  }
}
