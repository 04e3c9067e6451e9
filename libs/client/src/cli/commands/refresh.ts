import type { Command } from '../command';

/** `content refresh`: rotates the saved session (the client saves the new pair through its onCredentials). */
export const refresh: Command = async ({ client, signal, needCredentials, print }) => {
  needCredentials();
  const pair = await client.refresh(signal);
  print('session refreshed', { sid: pair.sid, refreshToken: pair.refreshToken });
  return 0;
};
