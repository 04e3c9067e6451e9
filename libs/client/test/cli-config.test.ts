// Where the `content` command line takes its settings from (flags > environment > saved login >
// defaults), and how it saves the login: atomically, mode 0600, in a 0700 directory.
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  DEFAULT_URL,
  defaultConfigPath,
  readConfig,
  resolveSettings,
  sameSettingsFlags,
  writeConfig,
} from '../src/cli/config';
import { run } from '../src/cli/main';
import { FakeContentApi } from './support/FakeContentApi';

// The fs module object itself (a namespace import would be a copy), so spies reach writeConfig.
const fs = jest.requireActual<typeof import('node:fs')>('node:fs');
const OWNER = '00000000-0000-4000-8000-000000000001';
const OTHER_OWNER = '00000000-0000-4000-8000-000000000002';

const stream = () => {
  let text = '';
  return {
    s: { write: (t: string) => ((text += t), true), isTTY: false } as unknown as NodeJS.WriteStream,
    text: () => text,
  };
};

describe('content settings: flags > environment > saved login > defaults', () => {
  const saved = { url: 'http://saved.example:1', owner: 'saved-owner', sid: 'S', refreshToken: 'R', apiKey: 'K' };

  it('gives a resume hint the --url, --owner and --config of the run, and never its token', () => {
    expect(sameSettingsFlags({})).toBe('');
    expect(sameSettingsFlags({ url: 'http://h:1', owner: OWNER, config: '/c.json', token: 'secret-token' })).toBe(
      ` --url http://h:1 --owner ${OWNER} --config /c.json --token <token>`,
    );
  });

  it('takes an environment variable over the saved login', () => {
    expect(resolveSettings({}, { CONTENT_URL: 'http://env.example:2', CONTENT_OWNER: 'env-owner' }, saved)).toEqual({
      url: 'http://env.example:2',
      owner: 'env-owner',
      token: undefined,
    });
  });

  it('takes a flag over the environment variable', () => {
    const env = { CONTENT_URL: 'http://env.example:2', CONTENT_OWNER: 'env-owner', CONTENT_TOKEN: 'env-token' };
    expect(
      resolveSettings({ url: 'http://flag.example:3', owner: 'flag-owner', token: 'flag-token' }, env, saved),
    ).toEqual({
      url: 'http://flag.example:3',
      owner: 'flag-owner',
      token: 'flag-token',
    });
  });

  it('falls back to the saved login, then to the defaults; an empty variable counts as unset', () => {
    expect(resolveSettings({}, { CONTENT_URL: '', CONTENT_OWNER: '', CONTENT_TOKEN: '' }, saved)).toEqual({
      url: saved.url,
      owner: saved.owner,
      token: undefined,
    });
    expect(resolveSettings({}, {}, {})).toEqual({ url: DEFAULT_URL, owner: undefined, token: undefined });
  });

  it('keeps the saved login under $XDG_CONFIG_HOME/content-platform/config.json', () => {
    expect(defaultConfigPath({ XDG_CONFIG_HOME: '/x/cfg' })).toBe('/x/cfg/content-platform/config.json');
  });

  describe('a command', () => {
    const dir = mkdtempSync(join(tmpdir(), 'cp-cli-config-'));
    const config = join(dir, 'config.json');
    let api: FakeContentApi;
    let url: string;
    let deadUrl: string;

    beforeAll(async () => {
      // A port that refuses connections: where the saved login points.
      const dead = new FakeContentApi();
      deadUrl = await dead.start();
      await dead.stop();
      api = new FakeContentApi();
      url = await api.start();
    });
    afterAll(async () => {
      await api.stop();
      rmSync(dir, { recursive: true, force: true });
    });

    const content = async (args: string[], env: NodeJS.ProcessEnv) => {
      const out = stream();
      const err = stream();
      const code = await run([...args, '--config', config, '--retry-for', '0', '--json'], env, out.s, err.s);
      return { code, stdout: out.text(), stderr: err.text() };
    };

    it('goes to $CONTENT_URL for $CONTENT_OWNER, not to the url and owner of the saved login', async () => {
      writeConfig(config, {
        url: deadUrl,
        owner: OTHER_OWNER,
        sid: api.sid,
        refreshToken: api.refreshToken,
        apiKey: 'k',
      });
      const r = await content(['status', '00000000-0000-4000-8000-0000000000aa'], {
        CONTENT_URL: url,
        CONTENT_OWNER: OWNER,
      });
      // The fake API answered (404: no such content) for the environment's owner, with the saved session.
      expect(r).toMatchObject({ code: 4 });
      const seen = api.seen.at(-1)!;
      expect(seen).toMatchObject({
        method: 'HEAD',
        path: `/v1/${OWNER}/contents/00000000-0000-4000-8000-0000000000aa`,
        authorization: `auth.sid ${api.sid}`,
      });
    });

    it('goes to --url and --owner over $CONTENT_URL and $CONTENT_OWNER', async () => {
      const before = api.seen.length;
      const r = await content(['status', '00000000-0000-4000-8000-0000000000bb', '--url', url, '--owner', OWNER], {
        CONTENT_URL: deadUrl,
        CONTENT_OWNER: OTHER_OWNER,
      });
      expect(r.code).toBe(4);
      expect(api.seen.slice(before).map((s) => s.path)).toEqual([
        `/v1/${OWNER}/contents/00000000-0000-4000-8000-0000000000bb`,
      ]);
    });

    it('uses the saved url when neither a flag nor a variable names one', async () => {
      writeConfig(config, { url: deadUrl, owner: OWNER, sid: api.sid, refreshToken: api.refreshToken, apiKey: 'k' });
      const r = await content(['status', '00000000-0000-4000-8000-0000000000cc'], {});
      expect(r.code).toBe(6);
      expect(JSON.parse(r.stderr)).toMatchObject({ exitCode: 6 });
      expect(r.stderr).toContain('connect ECONNREFUSED');
    });
  });
});

describe('the saved login (writeConfig)', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'cp-cli-config-'));
  });
  afterEach(() => {
    jest.restoreAllMocks();
    rmSync(dir, { recursive: true, force: true });
  });

  it('is written with mode 0600, in a directory it creates with mode 0700', () => {
    const path = join(dir, 'new', 'content-platform', 'config.json');
    writeConfig(path, { sid: 'S' });
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(statSync(join(dir, 'new', 'content-platform')).mode & 0o777).toBe(0o700);
    expect(readConfig(path)).toEqual({ sid: 'S' });
  });

  it('replaces a file that others could read with one only its owner can', () => {
    const path = join(dir, 'config.json');
    writeFileSync(path, '{}', { mode: 0o644 });
    writeConfig(path, { sid: 'S' });
    expect(statSync(path).mode & 0o777).toBe(0o600);
  });

  it('never opens the config file itself for writing: a temporary file beside it is renamed over it', () => {
    const path = join(dir, 'config.json');
    writeConfig(path, { sid: 'OLD' });
    const opened: string[] = [];
    const renamed: [string, string][] = [];
    const open = fs.openSync;
    const rename = fs.renameSync;
    jest.spyOn(fs, 'openSync').mockImplementation(((p: fs.PathLike, ...rest: unknown[]) => {
      opened.push(String(p));
      return (open as (...a: unknown[]) => number)(p, ...rest);
    }) as typeof fs.openSync);
    jest.spyOn(fs, 'renameSync').mockImplementation((from, to) => {
      renamed.push([String(from), String(to)]);
      // At the moment of the rename the temporary file is complete and the old config untouched.
      expect(JSON.parse(readFileSync(from, 'utf8'))).toEqual({ sid: 'NEW' });
      expect(readConfig(path)).toEqual({ sid: 'OLD' });
      rename(from, to);
    });
    writeConfig(path, { sid: 'NEW' });
    expect(opened).not.toContain(path);
    expect(renamed).toHaveLength(1);
    const [temp, target] = renamed[0]!;
    expect(target).toBe(path);
    expect(temp).not.toBe(path);
    expect(fs.realpathSync(join(temp, '..'))).toBe(fs.realpathSync(dir));
    expect(readConfig(path)).toEqual({ sid: 'NEW' });
  });

  it('leaves the old file whole, and no temporary file, when writing fails half-way', () => {
    const path = join(dir, 'config.json');
    writeConfig(path, { sid: 'OLD', refreshToken: 'R'.repeat(1000) });
    const before = readFileSync(path, 'utf8');
    const write = fs.writeSync;
    // The disk fills up after half of the new file is written.
    jest.spyOn(fs, 'writeSync').mockImplementation(((fd: number, buffer: Buffer, offset: number, length: number) => {
      (write as (...a: unknown[]) => number)(fd, buffer, offset, Math.floor(length / 2));
      throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
    }) as typeof fs.writeSync);
    expect(() => writeConfig(path, { sid: 'NEW', refreshToken: 'N'.repeat(1000) })).toThrow(/ENOSPC/);
    expect(readFileSync(path, 'utf8')).toBe(before);
    expect(readdirSync(dir)).toEqual(['config.json']);
  });
});
