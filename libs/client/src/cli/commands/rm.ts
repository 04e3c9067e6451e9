import type { Command } from '../command';
import { UsageError } from '../usage';

/** `content rm <id>`: deletes a ready content, or aborts an unfinished upload. */
export const rm: Command = async ({ args, client, signal, needOwner, needCredentials, print }) => {
  needCredentials();
  const [id] = args;
  if (!id) throw new UsageError('rm needs a content id');
  await client.delete(needOwner(), id, signal);
  print(`${id}: deleted`, { id, deleted: true });
  return 0;
};
