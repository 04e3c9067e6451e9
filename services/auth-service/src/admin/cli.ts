#!/usr/bin/env node
// The operator's command line for the auth-service registry (users and their certificates,
// trusted CAs, api keys). Configured by the service's own environment: MONGODB_URL and
// MONGODB_DATABASE (default "<CP_PREFIX or local>-auth", what scripts/start.sh uses).
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { Binary, MongoClient } from 'mongodb';
import { auditOperatorChange, type AuditOutcome } from '@cp/logging';
import { dnText } from '../certificates/CertificateFacts';
import {
  CertUnreadable,
  MAX_CERTIFICATES,
  parseCertificates,
  TooManyCertificates,
  type ParsedCertificate,
} from '../certificates/CertificateText';
import { ChainValidator } from '../certificates/ChainValidator';
import { ApiKeyStore, ThumbprintTaken, UserRegistry } from '@cp/registry';
import { TrustStore } from '../store/TrustStore';

const USAGE = `usage:
  admin user add --user <uuid> --owner <uuid> [--owner <uuid> ...] [--cert <pem file> ...]
                                                a file holding a chain (the certificate first, then its
                                                intermediates) must validate up to a trusted root; its
                                                intermediates are then remembered
  admin user show --user <uuid>
  admin cert remove --thumbprint <sha-1 hex>    a user's certificate no longer signs in
  admin apikey create [--label <text>] [--allow-free]
                                                prints the new key (shown once); --allow-free lets it
                                                sign in with free=true (no chain validation)
  admin apikey revoke --key <api key>
  admin trust add --cert <ca pem file>          self-signed: a trusted root; otherwise a known intermediate
  admin trust list
  admin trust remove --thumbprint <sha-1 hex>   every chain through it is refused, even when the
                                                client sends the certificate itself
  admin quota show|set --owner <uuid> ...       an owner's storage and upload quotas (admin quota --help)
running auth-service replicas see a revoked api key or a removed CA within 30 s (their caches)
environment: MONGODB_URL (default mongodb://127.0.0.1:27017/), MONGODB_DATABASE (default <CP_PREFIX|local>-auth)`;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

class UsageError extends Error {}
/** The thing to remove does not exist (exit code 3). */
class NotFound extends Error {}

const OPTIONS = {
  user: { type: 'string' },
  owner: { type: 'string', multiple: true },
  cert: { type: 'string', multiple: true },
  label: { type: 'string' },
  key: { type: 'string' },
  thumbprint: { type: 'string' },
  'allow-free': { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

async function main(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, options: OPTIONS });
  const [noun, verb] = positionals;
  if (values.help || !noun) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const url = process.env.MONGODB_URL || 'mongodb://127.0.0.1:27017/';
  const database =
    process.env.AUTH_MONGODB_DATABASE || process.env.MONGODB_DATABASE || `${process.env.CP_PREFIX || 'local'}-auth`;
  const mongo = new MongoClient(url, { serverSelectionTimeoutMS: 5_000 });
  await mongo.connect();
  try {
    const db = mongo.db(database);
    const now = new Date();
    const command = `${noun} ${verb ?? ''}`.trim();
    switch (command) {
      case 'user add': {
        const user = requireUuid(values.user, '--user');
        const owners = (values.owner ?? []).map((o) => requireUuid(o, '--owner'));
        if (owners.length === 0) throw new UsageError('user add needs at least one --owner');
        // Every file is read and every chain checked before anything is written.
        const chains = new ChainValidator(new TrustStore(db));
        const leaves: ParsedCertificate[] = [];
        for (const file of values.cert ?? []) {
          const [leaf, ...intermediates] = readCerts(file);
          if (intermediates.length > 0) {
            // A chain is checked the way sign-in checks it; its intermediates are remembered.
            const verdict = await chains.validate(leaf!, intermediates, now);
            if (!verdict.valid) throw new UsageError(`${file}: the chain does not validate: ${verdict.reason}`);
            process.stdout.write(
              `chain of ${leaf!.thumbprint} validated; ${verdict.remembered} intermediate(s) remembered\n`,
            );
          }
          leaves.push(leaf!);
        }
        const registry = new UserRegistry(db);
        await registry.ensureIndexes();
        const saved = await registry.upsertUser(user, owners, now);
        process.stdout.write(`user ${saved._id} owners ${saved.owners.join(',')}\n`);
        for (const leaf of leaves) {
          const outcome = await registry.addCertificate({
            _id: leaf!.thumbprint,
            userId: saved._id,
            subject: subjectOf(leaf!),
            notAfter: leaf!.cert.notAfter.value,
            der: new Binary(leaf!.der),
            addedAt: now,
          });
          process.stdout.write(`certificate ${leaf!.thumbprint} ${outcome}\n`);
        }
        break;
      }
      case 'user show': {
        const registry = new UserRegistry(db);
        const user = await registry.user(requireUuid(values.user, '--user'));
        if (!user) throw new UsageError('no such user');
        const certs = await registry.certificates.find({ userId: user._id }).toArray();
        process.stdout.write(
          `${JSON.stringify({ user: user._id, owners: user.owners, certificates: certs.map((c) => ({ thumbprint: c._id, subject: c.subject, notAfter: c.notAfter })) }, null, 2)}\n`,
        );
        break;
      }
      case 'cert remove': {
        const thumbprint = requireThumbprint(values.thumbprint);
        if (!(await new UserRegistry(db).removeCertificate(thumbprint)))
          throw new NotFound(`no certificate ${thumbprint} is registered`);
        process.stdout.write(`certificate ${thumbprint} removed\n`);
        break;
      }
      case 'apikey revoke': {
        if (!values.key?.trim()) throw new UsageError('apikey revoke needs --key <api key>');
        if (!(await new ApiKeyStore(db).revoke(values.key))) throw new NotFound('no such api key');
        process.stdout.write('api key revoked\n');
        break;
      }
      case 'trust remove': {
        const thumbprint = requireThumbprint(values.thumbprint);
        if (!(await new TrustStore(db).remove(thumbprint, now)))
          throw new NotFound(
            `no trusted certificate ${thumbprint} (chains through it are refused from now on all the same)`,
          );
        process.stdout.write(`trusted certificate ${thumbprint} removed\n`);
        break;
      }
      case 'apikey create': {
        process.stdout.write(
          `${await new ApiKeyStore(db).create(values.label ?? '', now, { allowFree: values['allow-free'] === true })}\n`,
        );
        break;
      }
      case 'trust add': {
        const files = values.cert ?? [];
        if (files.length === 0) throw new UsageError('trust add needs --cert <pem file>');
        const trust = new TrustStore(db);
        for (const file of files) {
          for (const c of readCerts(file, 10_000)) {
            // a CA bundle may hold many
            const kind = (await isSelfSigned(c)) ? 'root' : 'intermediate';
            await trust.add({ _id: c.thumbprint, kind, subject: subjectOf(c), der: new Binary(c.der), addedAt: now });
            process.stdout.write(`${kind} ${c.thumbprint} ${subjectOf(c)}\n`);
          }
        }
        break;
      }
      case 'trust list': {
        for (const d of await new TrustStore(db).list())
          process.stdout.write(
            `${d.kind} ${d._id} ${d.subject}${d.learned ? ' (remembered from a chain that validated)' : ''}\n`,
          );
        break;
      }
      default:
        throw new UsageError(`unknown command "${command}"\n${USAGE}`);
    }
  } finally {
    await mongo.close();
  }
}

/** A SHA-1 thumbprint as `user show` and `trust list` print it (colons and case do not matter). */
function requireThumbprint(value: string | undefined): string {
  const hex = (value ?? '').replace(/:/g, '').toUpperCase();
  if (!/^[0-9A-F]{40}$/.test(hex)) throw new UsageError('--thumbprint must be a SHA-1 thumbprint (40 hex digits)');
  return hex;
}

function requireUuid(value: string | undefined, flag: string): string {
  if (!value || !UUID.test(value)) throw new UsageError(`${flag} must be a UUID`);
  return value.toLowerCase();
}

function readCerts(file: string, maxCertificates = MAX_CERTIFICATES): ParsedCertificate[] {
  try {
    return parseCertificates(readFileSync(file), maxCertificates);
  } catch (error) {
    if (error instanceof CertUnreadable || error instanceof TooManyCertificates)
      throw new UsageError(`${file}: not a certificate (${error.message})`);
    throw error;
  }
}

function subjectOf(c: ParsedCertificate): string {
  return dnText(c.cert.subject);
}

async function isSelfSigned(c: ParsedCertificate): Promise<boolean> {
  if (!c.cert.issuer.isEqual(c.cert.subject)) return false;
  try {
    return await c.cert.verify(c.cert);
  } catch {
    return false;
  }
}

/** The commands that change something: each writes an audit record (see auditOperatorChange). */
const CHANGES = new Set(['user add', 'cert remove', 'apikey create', 'apikey revoke', 'trust add', 'trust remove']);

/** Runs a command, and audits it when it is a change: its user, owners or thumbprint, never a key. */
async function audited(argv: string[]): Promise<void> {
  // Not strict: a command that main refuses for its options is audited too.
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, strict: false, options: OPTIONS });
  const command = positionals.slice(0, 2).join(' ');
  const detail = {
    user: typeof values.user === 'string' ? values.user : null,
    thumbprint: typeof values.thumbprint === 'string' ? values.thumbprint : null,
    label: typeof values.label === 'string' ? values.label : null,
  };
  const audit = (outcome: AuditOutcome) => {
    if (CHANGES.has(command) && !values.help) auditOperatorChange('auth-admin', command, outcome, detail);
  };
  try {
    await main(argv);
    audit('ok');
  } catch (error) {
    audit(
      error instanceof UsageError || error instanceof ThumbprintTaken || error instanceof NotFound
        ? 'refused'
        : 'failed',
    );
    throw error;
  }
}

audited(process.argv.slice(2)).catch((error: unknown) => {
  const message =
    error instanceof UsageError || error instanceof ThumbprintTaken || error instanceof NotFound
      ? error.message
      : String((error as Error)?.stack ?? error);
  process.stderr.write(`admin: ${message}\n`);
  process.exit(error instanceof UsageError ? 2 : error instanceof NotFound ? 3 : 1);
});
