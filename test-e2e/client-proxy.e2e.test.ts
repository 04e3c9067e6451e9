// The `content` command line behind a proxy: HTTP_PROXY / HTTPS_PROXY (either case) send every
// request through it (sign-in, refresh, uploads, status, downloads), NO_PROXY hosts go direct.
// (The CLI helper unsets the runner's own proxy variables; each test sets the ones it tests.)
// The URL the CLI is given names a closed port that only the proxy maps to the gateway: a
// request that bypassed the proxy would be refused.
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cli } from './support/contentCli';
import { TestPki } from './support/pki';
import { closedPort, CountingProxy, TlsFront } from './support/proxies';
import { admin, newApiKey, registerUser } from './support/signin';
import { testStack, tokenFor } from './support/stack';

const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describe('content behind a proxy', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cp-client-proxy-'));
  const owner = randomUUID();
  const data = randomBytes(3 * 1024 * 1024 + 7);
  const file = join(dir, 'data.bin');
  const gatewayPort = () => Number(new URL(testStack().gatewayUrl).port);
  let token: string;
  beforeAll(async () => {
    token = await tokenFor([owner]);
    writeFileSync(file, data);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** upload, status, download with a token; returns what each printed. */
  async function roundTrip(url: string, env: NodeJS.ProcessEnv, extra: string[] = []): Promise<void> {
    const args = ['--owner', owner, '--url', url, '--retry-for', '0', '--json', '--parallel', '2', ...extra];
    const up = await cli(['upload', file, ...args], { env: { CONTENT_TOKEN: token, ...env } });
    expect(up).toMatchObject({ code: 0, stderr: '' });
    const { id } = JSON.parse(up.stdout) as { id: string };
    const status = await cli(['status', id, ...args], { env: { CONTENT_TOKEN: token, ...env } });
    expect(JSON.parse(status.stdout)).toMatchObject({ state: 'ready', total: data.length });
    const out = join(dir, `${id}.bin`);
    const down = await cli(['download', id, out, ...args, '--sha256', sha256(data)], {
      env: { CONTENT_TOKEN: token, ...env },
    });
    expect(down).toMatchObject({ code: 0, stderr: '' });
    expect(sha256(readFileSync(out))).toBe(sha256(data));
  }

  it.each([['HTTP_PROXY'], ['http_proxy']])('sends every plain-HTTP request through %s', async (variable) => {
    const port = await closedPort();
    const proxy = await new CountingProxy({ [port]: gatewayPort() }).start();
    try {
      await roundTrip(`http://127.0.0.1:${port}`, { [variable]: proxy.url });
      expect(proxy.forwarded).toEqual(
        expect.arrayContaining([
          `POST /v1/${owner}/contents`,
          expect.stringMatching(/^HEAD \/v1\//),
          expect.stringMatching(/^GET \/v1\//),
        ]),
      );
      expect(proxy.tunnels).toEqual([]);
    } finally {
      await proxy.stop();
    }
  });

  it('tunnels every HTTPS request through HTTPS_PROXY or https_proxy with CONNECT: login, refresh, upload, status, download', async () => {
    const front = await new TlsFront(gatewayPort()).start();
    const port = await closedPort();
    const proxy = await new CountingProxy({ [port]: front.port }).start();
    const url = `https://127.0.0.1:${port}`;
    try {
      const pki = new TestPki();
      const root = pki.root('Proxy Root');
      await admin('trust', 'add', '--cert', root.certPath);
      const user = pki.issue('proxy-user', root);
      await registerUser(user, [owner]);
      const apiKey = await newApiKey();
      const config = join(dir, 'proxy-config.json');
      const env = { HTTPS_PROXY: proxy.url, NODE_EXTRA_CA_CERTS: front.certPath };
      const login = await cli(
        [
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
          url,
          '--config',
          config,
          '--json',
          '--retry-for',
          '0',
        ],
        {
          env,
        },
      );
      expect(login).toMatchObject({ code: 0, stderr: '' });
      const refreshed = await cli(['refresh', '--config', config, '--json', '--retry-for', '0'], { env });
      expect(refreshed).toMatchObject({ code: 0, stderr: '' });
      await roundTrip(url, { https_proxy: proxy.url, NODE_EXTRA_CA_CERTS: front.certPath });
      expect(front.seen).toEqual(
        expect.arrayContaining([
          'POST /auth/v5.13/authenticate-by-cert',
          'POST /auth/v5.13/approve-cert',
          'POST /sessions/v5.13/sessions/refresh',
          `POST /v1/${owner}/contents`,
          expect.stringMatching(/^HEAD \/v1\//),
          expect.stringMatching(/^GET \/v1\//),
        ]),
      );
      // One tunnel per connection (kept alive across requests), each to the URL's host and port.
      expect(proxy.tunnels.length).toBeGreaterThanOrEqual(5);
      expect(new Set(proxy.tunnels)).toEqual(new Set([`127.0.0.1:${port}`]));
      expect(proxy.forwarded).toEqual([]);
    } finally {
      await proxy.stop();
      await front.stop();
    }
  });

  it.each([['NO_PROXY'], ['no_proxy']])(
    'goes direct to a host %s names, with HTTP_PROXY and HTTPS_PROXY set',
    async (variable) => {
      const proxy = await new CountingProxy({}).start();
      try {
        await roundTrip(testStack().gatewayUrl, {
          HTTP_PROXY: proxy.url,
          HTTPS_PROXY: proxy.url,
          [variable]: 'localhost,127.0.0.1',
        });
        expect(proxy.forwarded).toEqual([]);
        expect(proxy.tunnels).toEqual([]);
      } finally {
        await proxy.stop();
      }
    },
  );
});
