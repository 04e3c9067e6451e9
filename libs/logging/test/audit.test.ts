import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openAuditLog } from '../src/audit';
import { readAfterLag } from './support/laggingReader';

const DIST = join(__dirname, '..', 'dist', 'index.js');

describe('openAuditLog', () => {
  it('waits out a stderr pipe whose reader lags, losing and throwing nothing', async () => {
    // The child writes its stderr as a service does: touched first, so that Node made the pipe non-blocking.
    const records = 2000;
    const script = `
      process.stderr;
      const audit = require(${JSON.stringify(DIST)}).openAuditLog('test', 'stderr');
      for (let i = 0; i < ${records}; i++)
        audit.record({ event: 'content.download', actor: { kind: 'bearer', subject: 'x'.repeat(120) }, outcome: 'ok', detail: { i } });
    `;
    // Far more than a pipe holds (64 KiB) waits, unread, for a second.
    const { code, text } = await readAfterLag(script, 'stderr');
    expect(code).toBe(0);
    const lines = text.trim().split('\n');
    expect(lines).toHaveLength(records);
    expect(lines.map((l) => JSON.parse(l).detail.i)).toEqual([...Array(records).keys()]);
  }, 20_000);

  it('appends to a file, making its folder', () => {
    const dir = mkdtempSync(join(tmpdir(), 'audit-'));
    try {
      const path = join(dir, 'nested', 'audit.log');
      for (const n of [1, 2]) {
        const audit = openAuditLog('test', path);
        audit.record({
          event: 'session.signin',
          actor: { kind: 'certificate', subject: 'u' },
          outcome: 'ok',
          detail: { n },
        });
        audit.close();
      }
      const lines = readFileSync(path, 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      expect(lines.map((l) => [l.audit, l.service, l.detail.n])).toEqual([
        ['session.signin', 'test', 1],
        ['session.signin', 'test', 2],
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
