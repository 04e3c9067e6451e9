#!/usr/bin/env node
// The operator's command line for sessions: revoke every session of a user (a lost device, a
// removed certificate). Configured by the service's own environment: MONGODB_URL,
// MONGODB_DATABASE (default "<CP_PREFIX or local>-sessions", what scripts/start.sh uses), REDIS_URL or REDIS_SENTINELS.
import { parseArgs } from 'node:util';
import { MongoClient } from 'mongodb';
import { parseEnv, redisSettings, redisTarget } from '@cp/config';
import { auditOperatorChange, createLogger } from '@cp/logging';
import { closeRedis, connectRedis, redisReady } from '@cp/redis';
import { systemClock } from '@cp/service-kit';
import { SessionService } from '../sessions/SessionService';
import { SessionCache } from '@cp/session-cache';
import type { RegistrationChecker } from '@cp/registry';
import { SessionRepository } from '../store/SessionRepository';

const USAGE = `usage:
  sessions revoke --user <uuid>     every session of the user stops working at once (sid and refresh token)
environment: MONGODB_URL (default mongodb://127.0.0.1:27017/), MONGODB_DATABASE (default <CP_PREFIX|local>-sessions),
             REDIS_URL (default redis://127.0.0.1:6379) or REDIS_SENTINELS with REDIS_SENTINEL_MASTER, REDIS_USERNAME,
             REDIS_PASSWORD; CACHE_TTL_SECONDS (default 60), SID_TTL_SECONDS (default 30 days)`;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

class UsageError extends Error {}

/** The command line only revokes; it never refreshes, so it never asks the auth-service. */
const notRefreshing: RegistrationChecker = {
  check: () => Promise.reject(new Error('the sessions command line does not refresh')),
};

const OPTIONS = { user: { type: 'string' }, help: { type: 'boolean', short: 'h' } } as const;

async function main(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, options: OPTIONS });
  if (values.help || positionals.length === 0) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  if (positionals.join(' ') !== 'revoke') throw new UsageError(`unknown command "${positionals.join(' ')}"\n${USAGE}`);
  if (!values.user || !UUID.test(values.user)) throw new UsageError('--user must be a UUID');
  const userId = values.user.toLowerCase();

  const logger = createLogger({ service: 'sessions-admin', level: 'warn' });
  const mongo = new MongoClient(process.env.MONGODB_URL || 'mongodb://127.0.0.1:27017/', {
    serverSelectionTimeoutMS: 5_000,
  });
  const redisEnv =
    process.env.REDIS_URL || process.env.REDIS_SENTINELS
      ? process.env
      : { ...process.env, REDIS_URL: 'redis://127.0.0.1:6379' };
  const redis = connectRedis(redisTarget(parseEnv(redisSettings(), redisEnv)), logger);
  try {
    await mongo.connect();
    const database =
      process.env.SESSIONS_MONGODB_DATABASE ||
      process.env.MONGODB_DATABASE ||
      `${process.env.CP_PREFIX || 'local'}-sessions`;
    const repo = new SessionRepository(mongo.db(database));
    // Tombstones in Redis stop replicas from answering from their cache, which holds a sid as long
    // as it lives: no revocation without them.
    if (!(await redisReady(redis, 3_000))) {
      process.stderr.write('sessions: Redis does not answer; nothing was revoked, run the command again\n');
      process.exitCode = 1;
      return;
    }
    const sidSeconds = Number(process.env.SID_TTL_SECONDS || 30 * 24 * 3600);
    const sessions = new SessionService(
      repo,
      new SessionCache(redis, Number(process.env.CACHE_TTL_SECONDS || 60), sidSeconds),
      systemClock,
      { sidTtlMs: 0, refreshTtlMs: 0 },
      logger,
      notRefreshing,
    );
    const revoked = await sessions.revokeUser(userId);
    process.stdout.write(`revoked ${revoked} session${revoked === 1 ? '' : 's'} of user ${userId}\n`);
  } finally {
    await closeRedis(redis);
    await mongo.close();
  }
}

/** Runs the command and audits a revocation, done or not (see auditOperatorChange). */
async function audited(argv: string[]): Promise<void> {
  // Not strict: a command that main refuses for its options is audited too.
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, strict: false, options: OPTIONS });
  const revoking = positionals.join(' ') === 'revoke' && !values.help;
  const detail = { user: typeof values.user === 'string' ? values.user : null };
  try {
    await main(argv);
    if (revoking) auditOperatorChange('sessions-admin', 'sessions revoke', 'ok', detail);
  } catch (error) {
    if (revoking)
      auditOperatorChange(
        'sessions-admin',
        'sessions revoke',
        error instanceof UsageError ? 'refused' : 'failed',
        detail,
      );
    throw error;
  }
}

audited(process.argv.slice(2)).catch((error: unknown) => {
  process.stderr.write(
    `sessions: ${error instanceof UsageError ? error.message : String((error as Error)?.stack ?? error)}\n`,
  );
  process.exit(error instanceof UsageError ? 2 : 1);
});
