import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { ContentClient, PART_SIZE } from '@cp/client';
import { cli, startCli } from './support/contentCli';
import { TestPki } from './support/pki';
import { admin, newApiKey, registerUser } from './support/signin';
import { testStack, tokenFor } from './support/stack';

const MiB = 1024 * 1024;
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describe('the content command line and stream uploads against the running system', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-client-cli-'));
  const owner = randomUUID();
  let token: string;
  beforeAll(async () => {
    token = await tokenFor([owner]);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const base = () => ['--owner', owner, '--url', testStack().gatewayUrl];

  it('uploads a stream of unknown length (bytes a-b/* until the end) and it downloads back equal', async () => {
    const data = randomBytes(2 * PART_SIZE + 5 * MiB + 3);
    const c = new ContentClient({ baseUrl: testStack().gatewayUrl, credentials: { kind: 'bearer', token } });
    try {
      // Uneven 1 MB chunks, as a pipe would deliver them.
      const chunks = function* () {
        for (let i = 0; i < data.length; i += 1_000_000) yield data.subarray(i, i + 1_000_000);
      };
      const id = await c.uploadStream(Readable.from(chunks()), { owner, concurrency: 2 });
      const status = await c.status(owner, id);
      expect(status).toMatchObject({ state: 'ready', total: data.length });
      const out = join(dir, 'stream-back.bin');
      const r = await c.downloadFile(id, out, { owner, sha256: sha256(data) });
      expect(r.sha256).toBe(sha256(data));
      rmSync(out);
    } finally {
      c.close();
    }
  });

  it('uploads standard input with `content upload -`, its parts spooled in TMPDIR and gone afterwards', async () => {
    const data = randomBytes(PART_SIZE + 3 * MiB + 1);
    const spool = mkdtempSync(join(dir, 'tmp-'));
    const up = await cli(['upload', '-', ...base(), '--json'], {
      env: { CONTENT_TOKEN: token, TMPDIR: spool },
      stdin: data,
    });
    expect(up.code).toBe(0);
    expect(readdirSync(spool)).toEqual([]);
    const { id } = JSON.parse(up.stdout) as { id: string };
    const out = join(dir, 'stdin-back.bin');
    const down = await cli(['download', id, out, ...base(), '--sha256', sha256(data), '--json'], {
      env: { CONTENT_TOKEN: token },
    });
    expect(down.code).toBe(0);
    expect(JSON.parse(down.stdout)).toMatchObject({ bytes: data.length, sha256: sha256(data) });
  });

  it('removes the spooled parts of standard input when stopped by Ctrl-C', async () => {
    const spool = mkdtempSync(join(dir, 'tmp-'));
    const run = startCli(['upload', '-', ...base(), '--parallel', '1'], {
      env: { CONTENT_TOKEN: token, TMPDIR: spool },
      stdin: randomBytes(3 * PART_SIZE),
    });
    await run.stderrMatches(/upload: [1-9]\d*\/\? bytes/);
    // parts are waiting on disk while the upload runs
    expect(readdirSync(spool).filter((d) => d.startsWith('content-upload-'))).toHaveLength(1);
    run.child.kill('SIGINT');
    expect((await run.done).code).toBe(130);
    expect(readdirSync(spool)).toEqual([]);
  });

  it('stops on Ctrl-C with exit code 130 and the command to resume, which then sends only the rest', async () => {
    const data = randomBytes(4 * PART_SIZE + MiB);
    const file = join(dir, 'interrupted.bin');
    writeFileSync(file, data);
    const env = { CONTENT_TOKEN: token };
    const first = startCli(['upload', file, ...base(), '--parallel', '1'], { env });
    await first.stderrMatches(/upload: [4-9]0%/);
    first.child.kill('SIGINT');
    const stopped = await first.done;
    expect(stopped.code).toBe(130);
    const hint = /content upload \S+ --resume ([0-9a-f-]{36})(.*)/.exec(stopped.stderr);
    expect(hint).not.toBeNull();
    const id = hint![1]!;
    // The hint, run as printed, reaches the same content: it names the --url and --owner this run was given.
    expect(hint![2]!.trim()).toBe(`--url ${testStack().gatewayUrl} --owner ${owner}`);
    const status = await cli(['status', id, ...base(), '--json'], { env });
    const before = JSON.parse(status.stdout) as { state: string; received: { start: number; end: number }[] };
    expect(before.state).toBe('uploading');
    const have = before.received.reduce((n, r) => n + r.end - r.start + 1, 0);
    const resumed = await cli(['upload', file, '--resume', id, ...base()], { env });
    expect(resumed.code).toBe(0);
    expect(resumed.stdout.trim()).toBe(id);
    // Without a terminal progress comes as lines; the first counts what the service already had.
    const grid = Array.from({ length: Math.ceil(data.length / PART_SIZE) }, (_, k) => ({
      start: k * PART_SIZE,
      end: Math.min((k + 1) * PART_SIZE, data.length) - 1,
    }));
    const kept = grid
      .filter((p) => before.received.some((r) => r.start <= p.start && r.end >= p.end))
      .reduce((n, p) => n + p.end - p.start + 1, 0);
    expect(kept).toBeGreaterThan(0);
    expect(resumed.stderr.split('\n')[0]).toMatch(new RegExp(`^upload: \\d+% ${kept}/${data.length} bytes`));
    const after = JSON.parse((await cli(['status', id, ...base(), '--json'], { env })).stdout);
    expect(after).toMatchObject({ state: 'ready', total: data.length });
    expect(have).toBeGreaterThan(0);
    const out = join(dir, 'interrupted-back.bin');
    expect((await cli(['download', id, out, ...base(), '--sha256', sha256(data)], { env })).code).toBe(0);
    expect(sha256(readFileSync(out))).toBe(sha256(data));
  });

  it('says what happened and what to do for refused sign-ins, with exit code 3', async () => {
    const pki = new TestPki();
    const root = pki.root('CLI Errors Root');
    await admin('trust', 'add', '--cert', root.certPath);
    const stranger = pki.issue('not-registered', root);
    const apiKey = await newApiKey();
    const config = join(dir, 'errors-config.json');
    const login = (cert: string, key: string, k: string) =>
      cli(['login', '--cert', cert, '--key', key, '--api-key', k, '--url', testStack().gatewayUrl, '--config', config]);

    const unknown = await login(stranger.certPath, stranger.keyPath, apiKey);
    expect(unknown.code).toBe(3);
    expect(unknown.stderr).toMatch(/403 UnknownCertificate/);
    expect(unknown.stderr).toMatch(/not registered; ask the operator/);

    const user = pki.issue('registered', root);
    await registerUser(user, [owner]);
    const badKey = await login(user.certPath, user.keyPath, 'no-such-api-key');
    expect(badKey.code).toBe(3);
    expect(badKey.stderr).toMatch(/InvalidApiKey/);

    // A key that is not the certificate's cannot open the challenge.
    const other = pki.issue('other', root);
    const wrong = await login(user.certPath, other.keyPath, apiKey);
    expect(wrong.code).toBe(3);
    expect(wrong.stderr).toMatch(
      /content: the private key does not belong to the certificate\n {2}pass the certificate/,
    );
    const missing = await login(join(dir, 'no-such.pem'), user.keyPath, apiKey);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/no-such\.pem/);
  });

  it('signs in with an EC P-384 certificate', async () => {
    const pki = new TestPki();
    const root = pki.root('CLI EC Root');
    await admin('trust', 'add', '--cert', root.certPath);
    const user = pki.issue('p384-user', root, { kind: 'ec-p384' });
    await registerUser(user, [owner]);
    const apiKey = await newApiKey();
    const config = join(dir, 'p384-config.json');
    const login = await cli([
      'login',
      '--cert',
      user.certPath,
      '--key',
      user.keyPath,
      '--api-key',
      apiKey,
      '--owner',
      owner,
      '--url',
      testStack().gatewayUrl,
      '--config',
      config,
      '--json',
    ]);
    expect(login.stderr).toBe('');
    expect(login.code).toBe(0);
    const file = join(dir, 'p384.bin');
    writeFileSync(file, randomBytes(10));
    expect((await cli(['upload', file, '--config', config, '--json'])).code).toBe(0);
  });
});
