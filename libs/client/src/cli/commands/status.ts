import type { Command } from '../command';
import { UsageError } from '../usage';

/** `content status <id>`: the content's state, its length when known, and the byte ranges received. */
export const status: Command = async ({ args, client, signal, needOwner, needCredentials, print }) => {
  needCredentials();
  const [id] = args;
  if (!id) throw new UsageError('status needs a content id');
  const s = await client.status(needOwner(), id, signal);
  const ranges = s.received.map((r) => `${r.start}-${r.end}`).join(',');
  print(`${id}: ${s.state}, total ${s.total ?? 'unknown'}, received ${ranges || 'nothing'}`, { id, ...s });
  return 0;
};
