import type { Command } from '../command';

/** `content refresh`: rotates the saved session (the client saves the new pair through its onCredentials). */
export const refresh: Command = async ({ client, signal, needCredentials, print, configPath }) => {
  needCredentials();
  await client.refresh(signal);
  // The new pair is a secret: saved (0600), never printed.
  print('session refreshed', { refreshed: true, config: configPath });
  return 0;
};
