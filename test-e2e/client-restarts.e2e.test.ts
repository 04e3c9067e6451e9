// The client and the `content` command ride out restarts without the user doing anything: a
// gateway killed (kill -9) in the middle of a download or of an upload's part, a content-service
// killed mid-part, and an auth-service killed between authenticate-by-cert and approve-cert, each
// started again 3 s later on its port.
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { createReadStream, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ContentClient, type RetryNotice } from '@cp/client';
import { startCli } from './support/contentCli';
import { call } from './support/http';
import { decryptEncryptedKey, TestPki, type Issued } from './support/pki';
import { contentReplicaEnv, freePort, startService, type ServiceHandle } from './support/replicas';
import { admin, newApiKey, registerUser } from './support/signin';
import { testStack, tokenFor } from './support/stack';

const MiB = 1024 * 1024;
const DOWN_MS = 3000;
/** How soon after the restarted service is ready the interrupted work must be done. */
const RECOVERY_BOUND_MS = 30_000;

/**
 * The content-service's lease on a part being written (ASSEMBLY_LEASE_SECONDS): a write killed
 * mid-part leaves its claim, and retries of that part get 503 partWriting until the lease runs
 * out. Its default, 600 s, is longer than the client's default budget of 2 minutes: measured, the
 * CLI then gives up on that part with partWriting (and says how to resume).
 */
const PART_LEASE_SECONDS = 15;

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');
async function fileSha256(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** A service of our own on a fixed port, which a test kills with SIGKILL and starts again on that port. */
class Restartable {
  handle!: ServiceHandle;
  constructor(
    readonly name: string,
    readonly port: number,
    private readonly env: Record<string, string>,
  ) {}

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    this.handle = await startService(this.name, {
      port: this.port,
      env: this.env,
      logDir: join(testStack().logDir, 'restarts'),
    });
  }

  /** kill -9, then after DOWN_MS start it again; resolves once it is ready, with the times. */
  async killAndRestart(): Promise<{ killedAt: number; readyAt: number }> {
    const killedAt = Date.now();
    await this.handle.stop('SIGKILL');
    await sleep(DOWN_MS - (Date.now() - killedAt));
    await this.start();
    return { killedAt, readyAt: Date.now() };
  }
}

describe('the client rides out restarts of the gateway, the content-service and the auth-service', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-restarts-'));
  const owner = randomUUID();
  let token: string;
  let auth: Restartable;
  let content: Restartable;
  let gateway: Restartable;

  beforeAll(async () => {
    const stack = testStack();
    token = await tokenFor([owner]);
    const [authPort, contentPort, gatewayPort] = [await freePort(), await freePort(), await freePort()];
    content = new Restartable(
      'content-service',
      contentPort,
      contentReplicaEnv({
        LOG_LEVEL: 'warn',
        ASSEMBLY_LEASE_SECONDS: String(PART_LEASE_SECONDS),
        SESSION_SERVICE_URL: stack.services['session-service']!.url,
        SESSION_SERVICE_INTERNAL_SECRET: stack.internalSecrets.contentToSession,
      }),
    );
    gateway = new Restartable('gateway', gatewayPort, {
      LOG_LEVEL: 'warn',
      CONTENT_SERVICE_URL: content.url,
      AUTH_SERVICE_URL: `http://127.0.0.1:${authPort}`,
      SESSION_SERVICE_URL: stack.services['session-service']!.url,
    });
    auth = new Restartable('auth-service', authPort, {
      ...stack.authEnv,
      LOG_LEVEL: 'warn',
      SESSION_SERVICE_URL: stack.services['session-service']!.url,
      PUBLIC_BASE_URL: gateway.url,
    });
    await Promise.all([auth.start(), content.start()]);
    await gateway.start();
  });

  afterAll(async () => {
    await gateway?.handle?.stop();
    await auth?.handle?.stop();
    await content?.handle?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('finishes a download by itself when its gateway is killed mid-body and back 3 s later, byte for byte', async () => {
    const data = randomBytes(160 * MiB);
    const source = join(dir, 'down-source.bin');
    writeFileSync(source, data);
    const uploader = new ContentClient({ baseUrl: testStack().gatewayUrl, credentials: { kind: 'bearer', token } });
    const id = await uploader.uploadFile(source, { owner }).finally(() => uploader.close());

    const notices: RetryNotice[] = [];
    const c = new ContentClient({
      baseUrl: gateway.url,
      credentials: { kind: 'bearer', token },
      onRetry: (n) => notices.push(n),
    });
    let restart: Promise<{ killedAt: number; readyAt: number }> | null = null;
    const out = join(dir, 'down.bin');
    try {
      const r = await c.downloadFile(id, out, {
        owner,
        chunkSize: 16 * MiB,
        concurrency: 2,
        // Once a few ranges are in, while two more stream.
        onProgress: (p) => {
          if (p.done >= 24 * MiB && restart === null) restart = gateway.killAndRestart();
        },
      });
      const doneAt = Date.now();
      expect(restart).not.toBeNull();
      const { killedAt, readyAt } = await restart!;
      console.log(
        `download through a killed gateway: down ${seconds(readyAt - killedAt)} (kill to ready), done ${seconds(doneAt - readyAt)} after it was ready; waits: ${[...new Set(notices.map((n) => n.reason))].join(', ')}`,
      );
      expect(r).toEqual({ bytes: data.length, sha256: sha256(data) });
      expect(await fileSha256(out)).toBe(sha256(data));
      expect(notices.length).toBeGreaterThan(0);
      expect(doneAt - readyAt).toBeLessThan(RECOVERY_BOUND_MS);
      // 10 ranges and the HEAD, plus the attempts that met the dead gateway.
      expect(c.transport.requests).toBeGreaterThan(11);
    } finally {
      c.close();
      await restart;
    }
  });

  it('finishes an upload from the command line when its gateway is killed mid-part and back 3 s later', async () => {
    const data = randomBytes(256 * MiB);
    const file = join(dir, 'up.bin');
    writeFileSync(file, data);
    const run = startCli(
      ['upload', file, '--owner', owner, '--url', gateway.url, '--parallel', '1', '--retry-for', '1m'],
      { env: { CONTENT_TOKEN: token } },
    );
    // The first part created the content; the second is on its way.
    await run.stderrMatches(/upload: 20% /);
    await sleep(150);
    const { killedAt, readyAt } = await gateway.killAndRestart();
    const result = await run.done;
    const doneAt = Date.now();
    const waits = result.stderr.split('\n').filter((l) => l.includes('waiting'));
    console.log(
      `CLI upload through a killed gateway: down ${seconds(readyAt - killedAt)}, done ${seconds(doneAt - readyAt)} after it was ready; progress said:\n${waits.join('\n')}`,
    );
    expect(result.code).toBe(0);
    expect(waits.length).toBeGreaterThan(0);
    expect(waits[0]).toMatch(
      /^upload: waiting \d+ s: (connection (refused|reset|closed while sending)|service unavailable \(503\)|bad gateway \(502\)), retrying for (\d+m)?\d+s more$/,
    );
    expect(result.stderr).toMatch(/upload: going on after \d+s of retries/);
    expect(result.stderr).toMatch(/upload: 100% /);
    expect(doneAt - readyAt).toBeLessThan(RECOVERY_BOUND_MS);
    const id = result.stdout.trim();
    const back = join(dir, 'up-back.bin');
    const c = new ContentClient({ baseUrl: testStack().gatewayUrl, credentials: { kind: 'bearer', token } });
    try {
      expect(await c.downloadFile(id, back, { owner })).toEqual({ bytes: data.length, sha256: sha256(data) });
    } finally {
      c.close();
    }
  });

  it("finishes an upload from the command line when the content-service is killed mid-part, once the part's lease runs out", async () => {
    const data = randomBytes(256 * MiB);
    const file = join(dir, 'up-content.bin');
    writeFileSync(file, data);
    const run = startCli(['upload', file, '--owner', owner, '--url', gateway.url, '--parallel', '1'], {
      env: { CONTENT_TOKEN: token },
    });
    await run.stderrMatches(/upload: 20% /);
    await sleep(150);
    const { killedAt, readyAt } = await content.killAndRestart();
    const result = await run.done;
    const doneAt = Date.now();
    const waits = result.stderr.split('\n').filter((l) => l.includes('waiting'));
    console.log(
      `CLI upload through a killed content-service (part lease ${PART_LEASE_SECONDS} s): down ${seconds(readyAt - killedAt)}, done ${seconds(doneAt - readyAt)} after it was ready, ${seconds(doneAt - killedAt)} after the kill; progress said:\n${waits.join('\n')}`,
    );
    expect(result.code).toBe(0);
    expect(waits.length).toBeGreaterThan(0);
    // The killed write's claim holds the part until its lease runs out; then the retry goes through.
    expect(doneAt - killedAt).toBeLessThan(PART_LEASE_SECONDS * 1000 + RECOVERY_BOUND_MS);
    const back = join(dir, 'up-content-back.bin');
    const c = new ContentClient({ baseUrl: testStack().gatewayUrl, credentials: { kind: 'bearer', token } });
    try {
      expect(await c.downloadFile(result.stdout.trim(), back, { owner })).toEqual({
        bytes: data.length,
        sha256: sha256(data),
      });
    } finally {
      c.close();
    }
  });

  describe('sign-in', () => {
    let user: Issued;
    let apiKey: string;
    let signedOwner: string;

    beforeAll(async () => {
      const pki = new TestPki();
      const root = pki.root('Restarts Root');
      await admin('trust', 'add', '--cert', root.certPath);
      user = pki.issue('restarts-user', root);
      signedOwner = randomUUID();
      await registerUser(user, [signedOwner]);
      apiKey = await newApiKey();
    });

    it('approves on a restarted auth-service the challenge its killed predecessor issued', async () => {
      const challenged = await call(`${gateway.url}/auth/v5.13/authenticate-by-cert?apiKey=${apiKey}`, {
        method: 'POST',
        body: readFileSync(user.certPath),
      });
      expect(challenged.status).toBe(200);
      const { EncryptedKey, Link } = challenged.json() as { EncryptedKey: string; Link: { Href: string } };
      const rnd = decryptEncryptedKey(EncryptedKey, user);

      const { killedAt, readyAt } = await auth.killAndRestart();
      const approved = await call(`${Link.Href}&apiKey=${apiKey}`, {
        method: 'POST',
        body: rnd,
        headers: { 'content-type': 'application/octet-stream' },
      });
      const approvedAt = Date.now();
      console.log(
        `approve-cert on a restarted auth-service: down ${seconds(readyAt - killedAt)}, approved ${seconds(approvedAt - readyAt)} after it was ready`,
      );
      expect(approved.status).toBe(200);
      const { Sid } = approved.json() as { Sid: string };
      expect(Sid).toMatch(/^[0-9A-F]{64}$/);
      const created = await call(`${gateway.url}/v1/${signedOwner}/contents`, {
        method: 'POST',
        body: Buffer.from('hello'),
        headers: { authorization: `auth.sid ${Sid}` },
      });
      expect(created.status).toBe(201);
    });

    it('signs in with the library while the auth-service is down, once it is back', async () => {
      const notices: RetryNotice[] = [];
      const c = new ContentClient({
        baseUrl: gateway.url,
        credentials: { kind: 'bearer', token: '' },
        onRetry: (n) => notices.push(n),
      });
      try {
        const restart = auth.killAndRestart();
        await sleep(200);
        const pair = await c.signIn({
          certificatePem: readFileSync(user.certPath, 'utf8'),
          privateKeyPem: readFileSync(user.keyPath, 'utf8'),
          apiKey,
        });
        const doneAt = Date.now();
        const { killedAt, readyAt } = await restart;
        console.log(
          `library sign-in across an auth-service restart: down ${seconds(readyAt - killedAt)}, signed in ${seconds(doneAt - readyAt)} after it was ready; waits: ${notices.map((n) => `${n.reason} ${n.delayMs} ms`).join(', ')}`,
        );
        expect(pair.sid).toMatch(/^[0-9A-F]{64}$/);
        expect(notices.length).toBeGreaterThan(0);
        expect(notices[0]!.reason).toBe('service unavailable (503)');
        expect(doneAt - readyAt).toBeLessThan(RECOVERY_BOUND_MS);
      } finally {
        c.close();
      }
    });
  });
});
