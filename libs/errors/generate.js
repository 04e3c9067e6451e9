#!/usr/bin/env node
// Writes what the error catalogue (libs/errors/src) decides into the files that must list it:
// the client's hints (libs/client/src/generated/errorHints.ts) and the error-code enums of
// openapi.yaml (ContentsError.id, CodeError.Code). `pnpm generate:errors` runs it (then the
// client's types from openapi.yaml); libs/errors/test/catalogue.test.ts fails while its output
// differs from the files. A new code is one entry in the catalogue, its throw site, and this.
'use strict';
const { readFileSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');

const ROOT = join(__dirname, '../..');
const HINTS_FILE = join(ROOT, 'libs/client/src/generated/errorHints.ts');
const OPENAPI_FILE = join(ROOT, 'services/gateway/openapi.yaml');

const capitalised = (code) => code.charAt(0).toUpperCase() + code.slice(1);

/** The codes the API answers (all but `internal`), in the catalogue's order. */
function published(catalogue) {
  return Object.entries(catalogue).filter(([, spec]) => !spec.internal);
}

/** The client's hints file, formatted as the repository's prettier settings say. */
async function renderHints(catalogue) {
  const lines = published(catalogue).map(([code, spec]) => {
    if (!spec.hint) throw new Error(`the catalogue's ${code} has no hint: every code the API answers needs one`);
    return `  ${code}: ${JSON.stringify(spec.hint)},`;
  });
  const text = [
    '// Generated from the error catalogue (libs/errors/src) by `pnpm generate:errors`: do not edit.',
    '',
    '/** What to do about each code the API answers, in a sentence, for people. */',
    'export const HINTS: Readonly<Record<string, string>> = {',
    ...lines,
    '};',
    '',
  ].join('\n');
  const prettier = require('prettier');
  return prettier.format(text, { ...(await prettier.resolveConfig(HINTS_FILE)), parser: 'typescript' });
}

/** openapi.yaml with the enums of ContentsError.id and CodeError.Code listing the catalogue's codes. */
function renderOpenapi(yaml, catalogue) {
  const codes = published(catalogue);
  const contents = codes
    .filter(([, s]) => s.family !== 'signin')
    .map(([code]) => `            - 'urn:error:contents:${code}'`);
  // The gateway's own codes are answered on /auth and /sessions too, capitalised.
  const signin = codes
    .filter(([, s]) => s.family !== 'contents')
    .map(([code, s]) => `            - ${s.family === 'gateway' ? capitalised(code) : code}`);
  return replaceEnum(replaceEnum(yaml, '    ContentsError:', contents), '    CodeError:', signin);
}

/** Replaces the item lines of the first `enum:` under the schema that starts with `header`. */
function replaceEnum(yaml, header, items) {
  const lines = yaml.split('\n');
  const start = lines.indexOf(header);
  if (start < 0) throw new Error(`openapi.yaml has no ${header.trim()}`);
  const at = lines.findIndex((line, i) => i > start && line === '          enum:');
  if (at < 0) throw new Error(`openapi.yaml's ${header.trim()} has no enum`);
  let end = at + 1;
  while (end < lines.length && lines[end].startsWith('            - ')) end++;
  return [...lines.slice(0, at + 1), ...items, ...lines.slice(end)].join('\n');
}

module.exports = { renderHints, renderOpenapi, HINTS_FILE, OPENAPI_FILE };

async function main() {
  // The catalogue as compiled (`tsc -b libs/errors`, which the root script runs first).
  const { ERROR_CATALOGUE } = require('./dist/catalogue.js');
  writeFileSync(HINTS_FILE, await renderHints(ERROR_CATALOGUE));
  writeFileSync(OPENAPI_FILE, renderOpenapi(readFileSync(OPENAPI_FILE, 'utf8'), ERROR_CATALOGUE));
  console.log(`generate:errors: ${published(ERROR_CATALOGUE).length} codes into ${HINTS_FILE} and ${OPENAPI_FILE}`);
}

if (require.main === module)
  main().catch((error) => {
    console.error(error);
    process.exit(1);
  });
