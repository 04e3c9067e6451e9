import { readFileSync } from 'node:fs';
import type { Command } from '../command';
import { writeConfig, type SavedConfig } from '../config';
import { UsageError } from '../usage';

/** `content login --cert <pem> --key <pem> --api-key <key>`: signs in and saves the session with the url and owner. */
export const login: Command = async ({ flags, client, url, owner, configPath, signal, print }) => {
  if (!flags.cert || !flags.key || !flags['api-key'])
    throw new UsageError('login needs --cert <pem>, --key <pem> and --api-key <key>');
  const pair = await client.signIn({
    certificatePem: readFileSync(flags.cert, 'utf8'),
    privateKeyPem: readFileSync(flags.key, 'utf8'),
    apiKey: flags['api-key'],
    signal,
  });
  const next: SavedConfig = { url, owner, sid: pair.sid, refreshToken: pair.refreshToken, apiKey: flags['api-key'] };
  writeConfig(configPath, next);
  // The pair is a secret: it goes to the config file (0600) only, never to the terminal.
  print(`signed in; session saved in ${configPath}`, { signedIn: true, config: configPath });
  return 0;
};
