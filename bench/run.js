#!/usr/bin/env node
// `pnpm bench <name> [args]` runs bench/<name>.js. Benchmarks print figures, never assert on them.
const fs = require('node:fs');
const path = require('node:path');

const available = fs
  .readdirSync(__dirname)
  .filter((f) => f.endsWith('.js') && !['run.js'].includes(f) && !f.startsWith('_'))
  .map((f) => f.slice(0, -3));
const name = process.argv[2];
if (!name || !available.includes(name)) {
  process.stderr.write(`usage: pnpm bench <${available.join('|')}> [options]\n`);
  process.exit(2);
}
process.argv.splice(2, 1);
require(path.join(__dirname, `${name}.js`));
