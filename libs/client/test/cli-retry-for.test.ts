import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { run } from '../src/cli/main';
import { FakeContentApi } from './support/FakeContentApi';

const OWNER = '00000000-0000-4000-8000-000000000001';

describe('content --retry-for', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-cli-retry-'));
  let api: FakeContentApi;
  let url: string;
  const stream = () => {
    let text = '';
    return {
      s: { write: (t: string) => ((text += t), true), isTTY: false } as unknown as NodeJS.WriteStream,
      text: () => text,
    };
  };
  const content = (args: string[]) => {
    const out = stream();
    const err = stream();
    const env = { XDG_CONFIG_HOME: dir };
    return run([...args, '--owner', OWNER, '--url', url, '--token', 'ok'], env, out.s, err.s).then((code) => ({
      code,
      stdout: out.text(),
      stderr: err.text(),
    }));
  };

  beforeEach(async () => {
    api = new FakeContentApi();
    url = await api.start();
  });
  afterEach(() => api.stop());
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('refuses a malformed --sha256 before downloading anything (exit 2)', async () => {
    const r = await content([
      'download',
      '00000000-0000-4000-8000-000000000002',
      join(dir, 'x.bin'),
      '--sha256',
      'abc',
    ]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--sha256');
    expect(api.seen).toEqual([]);
  });

  it('says a local file problem is one (exit 2), not a bug or the network', async () => {
    const file = join(dir, 'for-a-folder.bin');
    writeFileSync(file, randomBytes(100));
    const { id } = JSON.parse((await content(['upload', file, '--json'])).stdout) as { id: string };
    const down = await content(['download', id, dir]); // a folder where the file should go
    expect(down.code).toBe(2);
    expect(down.stderr).toContain('check the file, its folder');
  });

  it('starts a download over when its journal is left without its .partial', async () => {
    const file = join(dir, 'source.bin');
    const data = randomBytes(3000);
    writeFileSync(file, data);
    const up = await content(['upload', file, '--json']);
    const { id } = JSON.parse(up.stdout) as { id: string };
    const out = join(dir, 'orphan.bin');
    const { etag } = JSON.parse((await content(['status', id, '--json'])).stdout) as { etag: string | null };
    writeFileSync(`${out}.partial.json`, JSON.stringify({ etag, total: 3000, done: [0] }));
    const down = await content(['download', id, out]);
    expect(down.code).toBe(0);
    expect(readFileSync(out).equals(data)).toBe(true);
  });

  it('gives up after the budget with exit code 6, saying how long it tried and why', async () => {
    const file = join(dir, 'small.bin');
    writeFileSync(file, randomBytes(10));
    api.intercept = () => ({
      status: 503,
      headers: { 'retry-after': '0' },
      body: {
        id: 'urn:error:contents:databaseUnavailable',
        'status-code': 503,
        message: 'the content database does not answer',
        'track-id': 'tr-1',
      },
    });
    const started = Date.now();
    const r = await content(['upload', file, '--retry-for', '1500ms']);
    expect(Date.now() - started).toBeLessThan(3000);
    expect(r.code).toBe(6);
    expect(r.stderr).toMatch(/^upload: waiting \d+ s: service unavailable \(503\), retrying for [12]s more$/m);
    expect(r.stderr).toMatch(
      /^content: gave up after retrying for 2s \(\d+ attempts\): service unavailable \(503\): the content database does not answer \(track id tr-1\)$/m,
    );
    expect(r.stderr).toMatch(/--retry-for/);
  });

  it('with --json reports the give-up as JSON with its figures', async () => {
    api.intercept = () => ({ status: 429, headers: { 'retry-after': '0' } });
    const r = await content(['status', '00000000-0000-4000-8000-000000000002', '--retry-for', '1s', '--json']);
    expect(r.code).toBe(6);
    const reported = JSON.parse(r.stderr) as Record<string, unknown>;
    expect(reported).toMatchObject({
      exitCode: 6,
      code: 'retriesExhausted',
      status: 429,
      reason: 'too many requests (429)',
    });
    expect(reported.retriedForMs).toBeGreaterThanOrEqual(1000);
  });

  it('refuses a duration it cannot read, with exit code 2', async () => {
    const r = await content(['status', '00000000-0000-4000-8000-000000000002', '--retry-for', 'soon']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--retry-for takes a duration such as 30s, 5m or 1h/);
    expect(api.seen).toEqual([]);
  });
});
