// jest's order of test files, longest first so that no long file starts last, with a fallback for
// a machine that has never run them: jest orders by the durations it cached on this machine, and
// by file size where it has none, which on a fresh clone started `contents.e2e` (191 lines, three
// minutes) among the last. Files this machine has not timed take their time from
// scripts/test-durations.json (seconds, from a full run; `node scripts/jest-sequencer.js --write`
// refreshes it from this machine's cache after one).
const fs = require('node:fs');
const path = require('node:path');
const Sequencer = require('@jest/test-sequencer').default;

const ROOT = path.resolve(__dirname, '..');
const TABLE = path.join(__dirname, 'test-durations.json');

function readTable() {
  try {
    return JSON.parse(fs.readFileSync(TABLE, 'utf8'));
  } catch {
    return {};
  }
}

class LongestFirst extends Sequencer {
  constructor(...args) {
    super(...args);
    this.table = readTable();
  }
  time(test) {
    const cached = super.time(test);
    if (cached != null) return cached;
    const seconds = this.table[path.relative(ROOT, test.path)];
    return seconds == null ? undefined : seconds * 1000;
  }
}
module.exports = LongestFirst;

// `node scripts/jest-sequencer.js --write [cacheDirectory]`: the table from jest's cached durations.
if (require.main === module && process.argv[2] === '--write') {
  const dir = process.argv[3] ?? path.join(process.env.TMPDIR ?? '/tmp', 'jest_content-platform');
  const table = {};
  for (const name of fs.readdirSync(dir).filter((n) => n.startsWith('perf-cache-'))) {
    const cache = JSON.parse(fs.readFileSync(path.join(dir, name), 'utf8'));
    // Paths from any clone of the repository: what follows its root.
    for (const [file, [, ms]] of Object.entries(cache)) {
      const inRepo = /\/((?:test-e2e|services|libs|deploy)\/.+)$/.exec(file)?.[1];
      if (inRepo) table[inRepo] = Math.round(ms / 100) / 10;
    }
  }
  const sorted = Object.fromEntries(Object.entries(table).sort(([a], [b]) => (a < b ? -1 : 1)));
  fs.writeFileSync(TABLE, `${JSON.stringify(sorted, null, 2)}\n`);
  console.log(`${Object.keys(sorted).length} files written to ${path.relative(process.cwd(), TABLE)}`);
}
