import type { ContentListItem } from '../../api';
import type { Command } from '../command';
import { UsageError } from '../usage';

/**
 * `content ls [--limit N] [--all]`: the owner's contents in id order, one line each (id, state,
 * size, type, created); a page of N (default 100), or with --all every page. With --json, the page
 * as the API answers it, or with --all `{"items":[...]}`.
 */
export const ls: Command = async ({ flags, client, signal, needOwner, needCredentials, print }) => {
  needCredentials();
  const limit = flags.limit === undefined ? undefined : Number(flags.limit);
  if (limit !== undefined && (!Number.isInteger(limit) || limit < 1 || limit > 1000))
    throw new UsageError('--limit must be a whole number from 1 to 1000');
  const owner = needOwner();
  if (flags.all) {
    const items: ContentListItem[] = [];
    for await (const item of client.listAll(owner, { limit, signal })) items.push(item);
    print(lines(items), { items });
    return 0;
  }
  const page = await client.list(owner, { limit, signal });
  const more = page['next-cursor'] !== null ? `\n(more contents follow: content ls --all)` : '';
  print(`${lines(page.items)}${more}`, page);
  return 0;
};

function lines(items: ContentListItem[]): string {
  if (items.length === 0) return '(no contents)';
  return items
    .map((i) =>
      [i.id, i.state.padEnd(9), String(i.size ?? '-').padStart(11), i['content-type'], i['created-at'] ?? '-'].join(
        '  ',
      ),
    )
    .join('\n');
}
