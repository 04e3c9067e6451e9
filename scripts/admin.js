#!/usr/bin/env node
// `pnpm admin`: the operator's command line. `quota ...` is the content-service's (owners' quotas),
// everything else the auth-service's (users, certificates, trusted CAs, api keys).
'use strict';
const { spawnSync } = require('node:child_process');
const path = require('node:path');

const service = process.argv[2] === 'quota' ? 'content-service' : 'auth-service';
const cli = path.join(__dirname, '..', 'services', service, 'dist', 'admin', 'cli.js');
const run = spawnSync(process.execPath, [cli, ...process.argv.slice(2)], { stdio: 'inherit' });
process.exit(run.status ?? 1);
