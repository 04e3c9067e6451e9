// The gateway takes service-kit without a database: nothing but connectMongo may load the driver.
// A fresh Node.js process loads the built package and tells which modules it loaded.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

const DIST = join(__dirname, '..', 'dist', 'index.js');

function loadedAfter(script: string): string[] {
  const out = execFileSync(
    process.execPath,
    [
      '-e',
      `const kit = require(${JSON.stringify(DIST)}); ${script}; console.log(JSON.stringify(Object.keys(require.cache)))`,
    ],
    { encoding: 'utf8' },
  );
  return JSON.parse(out) as string[];
}

describe('service-kit without MongoDB', () => {
  it('loads no MongoDB driver on import, nor to tell a Redis outage', () => {
    const loaded = loadedAfter(
      "if (kit.unavailableDependency({ code: 'CP_ERR_REDIS_UNAVAILABLE' }) !== 'cache') throw new Error('not cache'); kit.mongoUnavailable({})",
    );
    expect(loaded.some((path) => path.includes(`${join('node_modules', 'mongodb')}`))).toBe(false);
    expect(loaded.some((path) => path.endsWith(join('service-kit', 'dist', 'index.js')))).toBe(true);
  });
});
