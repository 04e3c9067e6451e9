// `content ls` and `content rm` against the running system, and ContentClient's list, listAll and delete.
import { randomBytes, randomUUID } from 'node:crypto';
import { ContentClient, type ContentListItem } from '@cp/client';
import { cli } from './support/contentCli';
import { postPart, rangeOf } from './support/http';
import { testStack, tokenFor } from './support/stack';

describe('listing and deleting contents from the client and the command line', () => {
  const owner = randomUUID();
  let token: string;
  let client: ContentClient;
  const ids: string[] = [];
  let uploading: string;

  beforeAll(async () => {
    token = await tokenFor([owner]);
    client = new ContentClient({ baseUrl: testStack().gatewayUrl, credentials: { kind: 'bearer', token } });
    for (let i = 0; i < 12; i++)
      ids.push((await postPart(owner, token, randomBytes(10 + i), null, 'text/plain')).json().id);
    uploading = (await postPart(owner, token, randomBytes(10), rangeOf(0, 10, 100))).json().id as string;
    ids.push(uploading);
    ids.sort();
  });
  afterAll(() => client?.close());

  const run = (...args: string[]) =>
    cli([...args, '--owner', owner, '--url', testStack().gatewayUrl], { env: { CONTENT_TOKEN: token } });

  it('lists every page with listAll, and one page with list', async () => {
    const all: ContentListItem[] = [];
    for await (const item of client.listAll(owner, { limit: 5 })) all.push(item);
    expect(all.map((i) => i.id)).toEqual(ids);
    expect(all.find((i) => i.id === uploading)).toMatchObject({ state: 'uploading', size: 100, 'completed-at': null });
    const page = await client.list(owner, { limit: 5 });
    expect(page.items.map((i) => i.id)).toEqual(ids.slice(0, 5));
    const next = await client.list(owner, { limit: 5, cursor: page['next-cursor'] });
    expect(next.items.map((i) => i.id)).toEqual(ids.slice(5, 10));
  });

  it('`content ls` prints a page, a line per content, and says when more follow; --all prints them all', async () => {
    const page = await run('ls', '--limit', '4');
    expect(page.code).toBe(0);
    const lines = page.stdout.trim().split('\n');
    expect(lines.slice(0, 4).map((l) => l.split(/\s+/)[0])).toEqual(ids.slice(0, 4));
    expect(lines[4]).toMatch(/more contents follow/);
    const all = await run('ls', '--all', '--limit', '5');
    expect(
      all.stdout
        .trim()
        .split('\n')
        .map((l) => l.split(/\s+/)[0]),
    ).toEqual(ids);
    expect(all.stdout).toMatch(new RegExp(`${uploading}\\s+uploading\\s+100\\s+application/octet-stream`));
    const json = await run('ls', '--all', '--json');
    expect((JSON.parse(json.stdout) as { items: ContentListItem[] }).items.map((i) => i.id)).toEqual(ids);
    const bad = await run('ls', '--limit', '5000');
    expect(bad.code).toBe(2);
  });

  it('`content rm` deletes a content (exit 0), and answers a second time with exit code 4', async () => {
    const id = ids.find((i) => i !== uploading);
    const first = await run('rm', id!);
    expect(first).toMatchObject({ code: 0, stdout: `${id}: deleted\n` });
    const again = await run('rm', id!, '--json');
    expect(again.code).toBe(4);
    expect(JSON.parse(again.stderr)).toMatchObject({ status: 404, code: 'contentNotFound' });
    expect((await run('rm', uploading)).code).toBe(0);
    const left: string[] = [];
    for await (const item of client.listAll(owner)) left.push(item.id);
    expect(left).toEqual(ids.filter((i) => i !== id && i !== uploading));
    await client.delete(owner, left[0]!);
    await expect(client.delete(owner, left[0]!)).rejects.toMatchObject({ status: 404 });
    expect((await run('rm')).code).toBe(2);
  });
});
