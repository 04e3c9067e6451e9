import type { WebhookEventType } from '../../api';
import type { Command } from '../command';
import { UsageError } from '../usage';

const EVENTS: WebhookEventType[] = ['content.completed', 'content.deleted', 'content.expired'];

/**
 * `content webhook add <url> [--events a,b]`: registers a receiver (all three events by default)
 * and prints its id and signing secret, shown only this once; `webhook ls`: the owner's webhooks;
 * `webhook rm <id>`: deletes one.
 */
export const webhook: Command = async ({ args, flags, client, signal, needOwner, needCredentials, print }) => {
  needCredentials();
  const [action, arg] = args;
  const owner = needOwner();
  if (action === 'add') {
    if (!arg) throw new UsageError('webhook add needs the receiver url');
    const events =
      flags.events === undefined
        ? EVENTS
        : String(flags.events)
            .split(',')
            .map((e) => e.trim());
    const unknown = events.filter((e) => !(EVENTS as string[]).includes(e));
    if (unknown.length > 0 || events.length === 0)
      throw new UsageError(`--events takes a comma-separated list of ${EVENTS.join(', ')}`);
    const created = await client.webhooks.create(owner, { url: arg, events: events as WebhookEventType[] }, signal);
    print(
      `${created.id}  ${created.events.join(',')}  ${created.url}\nsecret: ${created.secret}\n(keep the secret: it is not shown again)`,
      created,
    );
    return 0;
  }
  if (action === 'ls') {
    const items = await client.webhooks.list(owner, signal);
    const human = items.length
      ? items.map((w) => `${w.id}  ${w.events.join(',')}  ${w.url}  ${w['created-at']}`).join('\n')
      : '(no webhooks)';
    print(human, { items });
    return 0;
  }
  if (action === 'rm') {
    if (!arg) throw new UsageError('webhook rm needs a webhook id');
    await client.webhooks.delete(owner, arg, signal);
    print(`${arg}: deleted`, { id: arg, deleted: true });
    return 0;
  }
  throw new UsageError('webhook takes add <url> [--events ...], ls or rm <id>');
};
