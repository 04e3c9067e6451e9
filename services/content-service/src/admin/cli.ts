#!/usr/bin/env node
// The operator's command line for owners' quotas (`pnpm admin quota ...`; in Kubernetes
// `node dist/admin/cli.js quota ...` in a content-service pod). Configured by the service's own
// environment (S3_*, REDIS_*); S3_BUCKET defaults to "<CP_PREFIX or local>-contents", the local stack's.
import { parseArgs } from 'node:util';
import { auditOperatorChange, createLogger } from '@cp/logging';
import { closeRedis, connectRedis, redisReady } from '@cp/redis';
import { loadConfig } from '../config';
import { QuotaReconciler, type QuotaReport } from './QuotaReconciler';
import { ObjectStore } from '../store/ObjectStore';
import { RedisQuotas, UNLIMITED, type QuotaLimits } from '../store/RedisQuotas';
import { RedisUploadBook } from '../store/RedisUploadBook';
import { createS3Client } from '../store/s3Client';

const USAGE = `usage:
  admin quota show --owner <uuid>      the owner's limits, and its usage recounted from S3 (the counters
                                       are corrected by what the recount finds)
  admin quota set --owner <uuid> [--bytes <limit>] [--uploads <limit>]
                                       the owner's own limits: a number (bytes: with an optional
                                       K, M, G or T suffix, powers of 1024), "unlimited", or "default"
                                       (the service's QUOTA_STORAGE_BYTES / QUOTA_UNFINISHED_UPLOADS)
limits are enforced only by content-services started with QUOTAS=true
environment: the content-service's S3_ENDPOINT, S3_REGION, S3_BUCKET (default <CP_PREFIX|local>-contents),
             S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY, REDIS_URL (or the REDIS_SENTINEL_* settings)`;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const SUFFIX: Record<string, number> = { '': 1, K: 2 ** 10, M: 2 ** 20, G: 2 ** 30, T: 2 ** 40 };

class UsageError extends Error {}

const OPTIONS = {
  owner: { type: 'string' },
  bytes: { type: 'string' },
  uploads: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

async function main(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, options: OPTIONS });
  const command = positionals.join(' ');
  if (values.help || positionals.length === 0) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  if (command !== 'quota show' && command !== 'quota set')
    throw new UsageError(`unknown command "${command}"\n${USAGE}`);
  if (!values.owner || !UUID.test(values.owner)) throw new UsageError('--owner must be a UUID');
  const ownerId = values.owner.toLowerCase();
  const limits: Partial<QuotaLimits> = {
    bytes: parseLimit(values.bytes, '--bytes', true),
    uploads: parseLimit(values.uploads, '--uploads', false),
  };
  if (command === 'quota set' && limits.bytes === undefined && limits.uploads === undefined)
    throw new UsageError('quota set needs --bytes or --uploads');

  const config = loadConfig({ S3_BUCKET: `${process.env.CP_PREFIX || 'local'}-contents`, ...process.env });
  const logger = createLogger({ service: 'content-admin', level: 'warn' });
  const redis = connectRedis(config.REDIS_TARGET, logger, { commandTimeoutMs: 5_000 });
  const s3 = createS3Client(config);
  try {
    await redisReady(redis, 5_000); // a command that finds it not ready fails with RedisUnavailable
    const quotas = new RedisQuotas(redis, config.S3_BUCKET);
    if (command === 'quota set') await quotas.setLimits(ownerId, limits);
    const objects = new ObjectStore(s3, config.S3_BUCKET, { callMs: 30_000, stallMs: 30_000 });
    const report = await new QuotaReconciler(objects, new RedisUploadBook(redis, config.S3_BUCKET), quotas).reconcile(
      ownerId,
    );
    process.stdout.write(describe(report));
  } finally {
    s3.destroy();
    await closeRedis(redis);
  }
}

/** A limit as given: undefined when not given, null for "default", UNLIMITED for "unlimited". */
function parseLimit(text: string | undefined, option: string, sized: boolean): number | null | undefined {
  if (text === undefined) return undefined;
  if (text === 'default') return null;
  if (text === 'unlimited') return UNLIMITED;
  const m = (sized ? /^([0-9]{1,15})([KMGT]?)$/i : /^([0-9]{1,9})()$/).exec(text);
  const value = m ? Number(m[1]) * SUFFIX[m[2]!.toUpperCase()]! : NaN;
  if (!Number.isSafeInteger(value))
    throw new UsageError(
      `${option} must be a whole number${sized ? ' (K, M, G or T suffix allowed)' : ''}, "unlimited" or "default"`,
    );
  return value;
}

function describe(r: QuotaReport): string {
  const limit = (v: number | null) => (v === null ? 'default' : v === UNLIMITED ? 'unlimited' : String(v));
  return [
    `owner ${r.ownerId}`,
    `limits: bytes ${limit(r.limits.bytes)}, unfinished uploads ${limit(r.limits.uploads)}`,
    `stored: ${r.actual.used} bytes in ${r.contents} ready content${r.contents === 1 ? '' : 's'} (S3)`,
    `held: ${r.actual.reserved} bytes for ${r.uploads} unfinished upload${r.uploads === 1 ? '' : 's'}`,
    `counters: used ${r.counted.used} → ${r.after.used}, held ${r.counted.reserved} → ${r.after.reserved}`,
    '',
  ].join('\n');
}

/** Runs the command, auditing a change of limits, done or not (see auditOperatorChange). */
async function audited(argv: string[]): Promise<void> {
  // Not strict: a command that main refuses for its options is audited too.
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, strict: false, options: OPTIONS });
  const setting = positionals.join(' ') === 'quota set' && !values.help;
  const text = (v: unknown) => (typeof v === 'string' ? v : null);
  const detail = { owner: text(values.owner), bytes: text(values.bytes), uploads: text(values.uploads) };
  try {
    await main(argv);
    if (setting) auditOperatorChange('content-admin', 'quota set', 'ok', detail);
  } catch (error) {
    if (setting)
      auditOperatorChange('content-admin', 'quota set', error instanceof UsageError ? 'refused' : 'failed', detail);
    throw error;
  }
}

audited(process.argv.slice(2)).catch((error: unknown) => {
  process.stderr.write(
    `admin: ${error instanceof UsageError ? error.message : String((error as Error)?.stack ?? error)}\n`,
  );
  process.exit(error instanceof UsageError ? 2 : 1);
});
