import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ContentClient, PART_SIZE } from '@cp/client';
import { spawn } from 'node:child_process';
import { TestPki } from './support/pki';
import { admin, newApiKey, registerUser } from './support/signin';
import { startService } from '../tools/devstack/stack';
import { testStack, tokenFor } from './support/stack';

const MiB = 1024 * 1024;
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describe('the client library against the running system', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-client-'));
  const owner = randomUUID();
  let token: string;
  const big = join(dir, 'big.bin');
  let bigData: Buffer;

  beforeAll(async () => {
    token = await tokenFor([owner]);
    bigData = randomBytes(200 * MiB);
    writeFileSync(big, bigData);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const client = () => new ContentClient({ baseUrl: testStack().gatewayUrl, credentials: { kind: 'bearer', token } });

  it('uploads 200 MiB in 64 MiB parts, 4 in flight, and downloads it back with the same SHA-256', async () => {
    const c = client();
    try {
      const progress: number[] = [];
      const id = await c.uploadFile(big, { owner, concurrency: 4, onProgress: (p) => progress.push(p.done) });
      expect(progress[progress.length - 1]).toBe(bigData.length);
      const status = await c.status(owner, id);
      expect(status).toMatchObject({ state: 'ready', total: bigData.length });
      const out = join(dir, 'back.bin');
      const r = await c.downloadFile(id, out, { owner, concurrency: 4, sha256: sha256(bigData) });
      expect(r).toEqual({ bytes: bigData.length, sha256: sha256(bigData) });
      expect(sha256(readFileSync(out))).toBe(sha256(bigData));
      rmSync(out);
    } finally {
      c.close();
    }
  });

  it('resumes an interrupted upload and sends only the parts the service lacks', async () => {
    const c = client();
    const abort = new AbortController();
    let id: string | undefined;
    try {
      await expect(
        c.uploadFile(big, {
          owner,
          concurrency: 1,
          signal: abort.signal,
          onContentId: (cid) => (id = cid),
          onProgress: (p) => {
            if (p.done >= 2 * PART_SIZE) abort.abort(new Error('stop'));
          },
        }),
      ).rejects.toThrow();
    } finally {
      c.close();
    }
    expect(id).toBeDefined();
    const probe = client();
    const before = await probe.status(owner, id!);
    probe.close();
    expect(before.state).toBe('uploading');
    const have = before.received.reduce((n, r) => n + r.end - r.start + 1, 0);
    expect(have).toBeGreaterThanOrEqual(2 * PART_SIZE);
    const parts = Math.ceil(bigData.length / PART_SIZE);
    const missing = parts - have / PART_SIZE;
    expect(missing).toBeGreaterThan(0);

    const again = client();
    try {
      const resumed = await again.uploadFile(big, { owner, resume: id });
      expect(resumed).toBe(id);
      // one HEAD before, one PUT per missing part, one HEAD after
      expect(again.transport.requests).toBe(missing + 2);
      const out = join(dir, 'resumed.bin');
      await again.downloadFile(id!, out, { owner, sha256: sha256(bigData) });
      rmSync(out);
    } finally {
      again.close();
    }
  });

  it('resumes an interrupted download from the ranges it already has', async () => {
    const c = client();
    const small = randomBytes(5 * MiB + 3);
    const file = join(dir, 'small.bin');
    writeFileSync(file, small);
    const id = await c.uploadFile(file, { owner });
    const out = join(dir, 'small-back.bin');
    const abort = new AbortController();
    await expect(
      c.downloadFile(id, out, {
        owner,
        chunkSize: MiB,
        concurrency: 1,
        signal: abort.signal,
        onProgress: (p) => p.done >= 2 * MiB && abort.abort(new Error('stop')),
      }),
    ).rejects.toThrow();
    const before = c.transport.requests;
    const r = await c.downloadFile(id, out, { owner, chunkSize: MiB, concurrency: 1, resume: true });
    expect(r.sha256).toBe(sha256(small));
    // one HEAD, then only the 1 MiB ranges not yet written (6 in all, at least 2 done)
    expect(c.transport.requests - before).toBeLessThanOrEqual(1 + 4);
    c.close();
  });

  describe('with a certificate', () => {
    let cert: string;
    let key: string;
    let apiKey: string;
    let signedOwner: string;
    let signedUser: string; // a refresh checks that the user is still registered

    beforeAll(async () => {
      const pki = new TestPki();
      const root = pki.root('Client Root');
      await admin('trust', 'add', '--cert', root.certPath);
      const user = pki.issue('client-user', root);
      signedOwner = randomUUID();
      signedUser = (await registerUser(user, [signedOwner])).userId;
      apiKey = await newApiKey();
      cert = readFileSync(user.certPath, 'utf8');
      key = readFileSync(user.keyPath, 'utf8');
    });

    it('signs in with a certificate and key made by openssl, then uploads with the session', async () => {
      const c = new ContentClient({ baseUrl: testStack().gatewayUrl, credentials: { kind: 'bearer', token: '' } });
      try {
        const pair = await c.signIn({ certificatePem: cert, privateKeyPem: key, apiKey });
        expect(pair.sid).toMatch(/^[0-9A-F]{64}$/);
        const file = join(dir, 'session.bin');
        writeFileSync(file, randomBytes(1000));
        const id = await c.uploadFile(file, { owner: signedOwner });
        expect((await c.status(signedOwner, id)).state).toBe('ready');
      } finally {
        c.close();
      }
    });

    it('signs in with an EC P-256 certificate too', async () => {
      const pki = new TestPki();
      const root = pki.root('Client EC Root');
      await admin('trust', 'add', '--cert', root.certPath);
      const ecUser = pki.issue('client-ec-user', root, { kind: 'ec-p256' });
      const ecOwner = randomUUID();
      await registerUser(ecUser, [ecOwner]);
      const c = new ContentClient({ baseUrl: testStack().gatewayUrl, credentials: { kind: 'bearer', token: '' } });
      try {
        const pair = await c.signIn({
          certificatePem: readFileSync(ecUser.certPath, 'utf8'),
          privateKeyPem: readFileSync(ecUser.keyPath, 'utf8'),
          apiKey,
        });
        expect(pair.sid).toMatch(/^[0-9A-F]{64}$/);
      } finally {
        c.close();
      }
    });

    it('signs in from the command line, keeps the session, and answers with documented exit codes', async () => {
      const stack = testStack();
      const config = join(dir, 'cli-config.json');
      const pki = new TestPki();
      const certFile = join(pki.dir, 'cli.pem');
      const keyFile = join(pki.dir, 'cli.key');
      writeFileSync(certFile, cert);
      writeFileSync(keyFile, key);
      const login = await cli([
        'login',
        '--cert',
        certFile,
        '--key',
        keyFile,
        '--api-key',
        apiKey,
        '--owner',
        signedOwner,
        '--url',
        stack.gatewayUrl,
        '--config',
        config,
        '--json',
      ]);
      expect(login.code).toBe(0);
      // The pair goes to the config file only, never to the terminal.
      expect(JSON.parse(login.stdout)).toEqual({ signedIn: true, config });
      const saved = JSON.parse(readFileSync(config, 'utf8')) as { sid: string; refreshToken: string };
      expect(saved.sid).toMatch(/^[0-9A-F]{64}$/);
      expect(login.stdout).not.toContain(saved.sid);
      expect(login.stdout).not.toContain(saved.refreshToken);
      const file = join(dir, 'cli-small.bin');
      writeFileSync(file, randomBytes(3000));
      const up = await cli(['upload', file, '--config', config, '--json']);
      expect(up.code).toBe(0);
      const { id } = JSON.parse(up.stdout) as { id: string };
      const status = await cli(['status', id, '--config', config, '--json']);
      expect(JSON.parse(status.stdout)).toMatchObject({ id, state: 'ready', total: 3000 });
      const sidBefore = JSON.parse(readFileSync(config, 'utf8')).sid as string;
      const refreshed = await cli(['refresh', '--config', config, '--json']);
      expect(refreshed.code).toBe(0);
      const sidAfter = JSON.parse(readFileSync(config, 'utf8')).sid as string;
      expect(sidAfter).not.toBe(sidBefore);
      // The new pair is saved, never printed.
      expect(JSON.parse(refreshed.stdout)).toEqual({ refreshed: true, config });
      expect(refreshed.stdout).not.toContain(sidAfter);
      const unknown = await cli(['status', randomUUID(), '--config', config, '--json']);
      expect(unknown.code).toBe(4);
      expect(JSON.parse(unknown.stderr)).toMatchObject({ status: 404, code: 'contentNotFound' });
      const stranger = await cli(['status', id, '--owner', randomUUID(), '--config', config]);
      expect(stranger.code).toBe(3);
      expect(stranger.stderr).toContain('ownerForbidden');
      expect((await cli(['upload', '--config', config])).code).toBe(2);
    });

    it('refreshes once when a call gets 401, and the call succeeds', async () => {
      // A second session-service replica that hands out sids living one second.
      const stack = testStack();
      const shortLived = await startService('session-service', {
        logDir: stack.logDir,
        env: { ...stack.sessionEnv, SID_TTL_SECONDS: '1', LOG_LEVEL: 'warn' },
      });
      try {
        const created = await postJson(
          `${shortLived.url}/internal/sessions`,
          { userId: signedUser, owners: [signedOwner] },
          { 'x-internal-secret': stack.internalSecrets.authToSession },
        );
        await sleep(1500); // the sid is now expired; its refresh token lives on
        let saved: unknown = null;
        const c = new ContentClient({
          baseUrl: stack.gatewayUrl,
          credentials: { kind: 'session', sid: created.Sid, refreshToken: created.RefreshToken, apiKey },
          onCredentials: (cr) => (saved = cr),
        });
        try {
          const file = join(dir, 'refresh.bin');
          writeFileSync(file, randomBytes(100));
          const id = await c.uploadFile(file, { owner: signedOwner });
          expect(id).toMatch(/^[0-9a-f-]{36}$/);
          expect(saved).toMatchObject({ kind: 'session' });
          expect((saved as { sid: string }).sid).not.toBe(created.Sid);
          // exactly one refresh: the failed POST, the refresh, the POST again (then the HEAD that
          // holds the upload against the service's Repr-Digest)
          expect(c.transport.requests).toBe(4);
        } finally {
          c.close();
        }
      } finally {
        await shortLived.stop();
      }
    });
  });

  it('shows a progress bar in a terminal that ends at 100%', async () => {
    const stack = testStack();
    const file = join(dir, 'tty.bin');
    writeFileSync(file, randomBytes(40 * MiB));
    const session = `cp-${process.pid}`;
    const cli = join(__dirname, '..', 'libs', 'client', 'dist', 'cli', 'main.js');
    const cmd = `CONTENT_TOKEN=${token} ${process.execPath} ${cli} upload ${file} --owner ${owner} --url ${stack.gatewayUrl} --parallel 2; echo EXIT=$?; sleep 30`;
    await run('tmux', ['new-session', '-d', '-s', session, '-x', '160', '-y', '10', cmd]);
    try {
      let screen = '';
      for (let i = 0; i < 200 && !screen.includes('EXIT='); i++) {
        await sleep(100);
        screen = await run('tmux', ['capture-pane', '-p', '-t', session]);
      }
      expect(screen).toContain('EXIT=0');
      expect(screen).toMatch(/upload \[=+\] 100% \| 40\.0\/40\.0 MiB \| \d+(\.\d)? MB\/s \| ETA \S+/);
    } finally {
      await run('tmux', ['kill-session', '-t', session]).catch(() => undefined);
    }
  });
});

function postJson(
  url: string,
  body: unknown,
  headers: Record<string, string>,
): Promise<{ Sid: string; RefreshToken: string }> {
  return new Promise((resolve, reject) => {
    const data = Buffer.from(JSON.stringify(body));
    const req = request(
      url,
      { method: 'POST', headers: { ...headers, 'content-type': 'application/json', 'content-length': data.length } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          res.statusCode === 201
            ? resolve(JSON.parse(Buffer.concat(chunks).toString()))
            : reject(new Error(`${res.statusCode} ${Buffer.concat(chunks)}`)),
        );
      },
    );
    req.on('error', reject);
    req.end(data);
  });
}

/** The `content` command as a user runs it: exit code, stdout, stderr. */
function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [join(__dirname, '..', 'libs', 'client', 'dist', 'cli', 'main.js'), ...args],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, CONTENT_TOKEN: '' },
      },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

function run(cmd: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`${cmd} ${args.join(' ')} exited ${code}: ${out}`)),
    );
  });
}
