#!/usr/bin/env node
// Prints a development access token that the local stack accepts (it trusts the dev key only
// because its configuration names that key's JWKS file).
//   pnpm --silent token --owner <uuid> [--owner <uuid> ...] [--ttl 1h] [--sub <subject>]
const path = require('node:path');
const { DevKeys } = require('@cp/credentials');

function parseTtl(value) {
  const m = /^(\d+)([smhd]?)$/.exec(value);
  if (!m) throw new Error(`--ttl ${value}: use a number of seconds or 30m, 1h, 7d`);
  return Number(m[1]) * { '': 1, s: 1, m: 60, h: 3600, d: 86400 }[m[2]];
}

async function main(argv) {
  const owners = [];
  let ttl = 3600;
  let sub;
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = argv[i + 1];
    if (!value || !['--owner', '--ttl', '--sub'].includes(flag))
      throw new Error(
        `unknown argument ${flag}; usage: token --owner <uuid> [--owner ...] [--ttl 1h] [--sub <subject>]`,
      );
    if (flag === '--owner') owners.push(value.toLowerCase());
    else if (flag === '--ttl') ttl = parseTtl(value);
    else sub = value;
    i++;
  }
  if (owners.length === 0) throw new Error('give at least one --owner <uuid>');
  const keys = new DevKeys(process.env.DEV_KEYS_DIR || path.join(__dirname, '..', '.local', 'dev-keys'));
  process.stdout.write(`${await keys.mint({ owners, ttlSeconds: ttl, subject: sub })}\n`);
}

main(process.argv.slice(2)).catch((error) => {
  process.stderr.write(`token: ${error.message}\n`);
  process.exit(2);
});
