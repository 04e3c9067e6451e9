import { join } from 'node:path';
import { readAfterLag } from './support/laggingReader';

const DIST = join(__dirname, '..', 'dist', 'index.js');

describe('createLogger on stdout', () => {
  it('holds no more than its buffer while the reader lags, drops whole lines past it, and goes on', async () => {
    // 4,000 lines of about 1 KiB against a 256 KiB buffer, written while nobody reads stdout.
    const script = `
      const logger = require(${JSON.stringify(DIST)}).createLogger({ service: 'test', bufferBytes: 256 * 1024 });
      for (let i = 0; i < 4000; i++) logger.info({ i, pad: 'x'.repeat(1000) }, 'line');
      setTimeout(() => { logger.info({ i: 'last' }, 'line'); logger.flush(); }, 1500);
    `;
    const { code, text } = await readAfterLag(script, 'stdout');
    expect(code).toBe(0);
    const seen = text
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as { i: number | string }).i);
    // What the pipe (64 KiB) and the buffer (256 KiB) held came through, in order; the rest was dropped.
    const numbers = seen.filter((i): i is number => typeof i === 'number');
    expect(numbers.length).toBeGreaterThan(50);
    expect(numbers.length).toBeLessThan(400);
    expect(numbers).toEqual([...numbers].sort((a, b) => a - b));
    // Once the reader caught up, lines flow again.
    expect(seen.at(-1)).toBe('last');
  }, 20_000);
});
