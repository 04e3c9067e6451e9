// Certificates for the sign-in tests, made by the openssl command line the way an operator or a
// client would: a root CA, an intermediate, and user certificates (RSA or EC) with any validity.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface Issued {
  name: string;
  certPath: string;
  keyPath: string;
  pem: string;
  der: Buffer;
  /** SHA-1 of the DER, upper-case hex. */
  thumbprint: string;
}

export type KeyKind = 'rsa' | 'ec-p256' | 'ec-p384';

export const openssl = (args: string[], input?: Buffer): Buffer =>
  execFileSync('openssl', args, { input, stdio: [input ? 'pipe' : 'ignore', 'pipe', 'pipe'] });

/** openssl's date form for -startdate/-enddate. */
export const asn1Time = (d: Date): string => d.toISOString().replace(/[-:T]/g, '').slice(0, 14) + 'Z';

const DAY = 24 * 3600 * 1000;

/** A private CA directory for `openssl ca`, so certificates can have any validity period. */
export class TestPki {
  readonly dir: string;

  constructor(dir = mkdtempSync(join(tmpdir(), 'cp-pki-'))) {
    this.dir = dir;
  }

  private keyArgs(kind: KeyKind): string[] {
    if (kind === 'rsa') return ['-newkey', 'rsa:2048'];
    return ['-newkey', 'ec', '-pkeyopt', `ec_paramgen_curve:${kind === 'ec-p256' ? 'P-256' : 'P-384'}`];
  }

  /** A self-signed CA (a trusted root once `admin trust add` is run on it, or an untrusted one). */
  root(name: string, kind: KeyKind = 'rsa'): Issued {
    const keyPath = join(this.dir, `${name}.key`);
    const certPath = join(this.dir, `${name}.pem`);
    openssl([
      'req',
      '-x509',
      ...this.keyArgs(kind),
      '-nodes',
      '-sha256',
      '-days',
      '3650',
      '-subj',
      `/CN=${name}/O=Content Platform Tests`,
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
      '-keyout',
      keyPath,
      '-out',
      certPath,
    ]);
    return this.read(name, certPath, keyPath);
  }

  /** A certificate signed by `issuer`; `ca` makes it an intermediate CA. */
  issue(
    name: string,
    issuer: Issued,
    opts: { kind?: KeyKind; ca?: boolean; notBefore?: Date; notAfter?: Date } = {},
  ): Issued {
    const keyPath = join(this.dir, `${name}.key`);
    const csrPath = join(this.dir, `${name}.csr`);
    const certPath = join(this.dir, `${name}.pem`);
    openssl([
      'req',
      '-new',
      ...this.keyArgs(opts.kind ?? 'rsa'),
      '-nodes',
      '-subj',
      `/CN=${name}/O=Content Platform Tests`,
      '-keyout',
      keyPath,
      '-out',
      csrPath,
    ]);
    const caDir = join(this.dir, `ca-${issuer.name}`);
    mkdirSync(join(caDir, 'new'), { recursive: true });
    const config = join(caDir, 'openssl.cnf');
    writeFileSync(join(caDir, 'index.txt'), '', { flag: 'a' });
    writeFileSync(
      config,
      [
        '[ca]',
        'default_ca = local',
        '[local]',
        `dir = ${caDir}`,
        `database = ${caDir}/index.txt`,
        `new_certs_dir = ${caDir}/new`,
        `serial = ${caDir}/serial`,
        'rand_serial = yes',
        'default_md = sha256',
        'policy = any',
        'unique_subject = no',
        'copy_extensions = none',
        '[any]',
        'commonName = supplied',
        'organizationName = optional',
        '[ext_ca]',
        'basicConstraints = critical,CA:TRUE',
        'keyUsage = critical,keyCertSign,cRLSign',
        '[ext_user]',
        'basicConstraints = CA:FALSE',
        'keyUsage = critical,digitalSignature,keyEncipherment,keyAgreement',
        '',
      ].join('\n'),
    );
    const notBefore = opts.notBefore ?? new Date(Date.now() - DAY);
    const notAfter = opts.notAfter ?? new Date(Date.now() + 365 * DAY);
    openssl([
      'ca',
      '-batch',
      '-notext',
      '-config',
      config,
      '-cert',
      issuer.certPath,
      '-keyfile',
      issuer.keyPath,
      '-in',
      csrPath,
      '-out',
      certPath,
      '-startdate',
      asn1Time(notBefore),
      '-enddate',
      asn1Time(notAfter),
      '-extensions',
      opts.ca ? 'ext_ca' : 'ext_user',
    ]);
    return this.read(name, certPath, keyPath);
  }

  /** A PEM file holding the user's certificate followed by its intermediates. */
  chainFile(leaf: Issued, ...intermediates: Issued[]): string {
    const path = join(this.dir, `${leaf.name}-chain.pem`);
    writeFileSync(path, [leaf, ...intermediates].map((c) => c.pem).join(''));
    return path;
  }

  private read(name: string, certPath: string, keyPath: string): Issued {
    const pem = readFileSync(certPath, 'utf8');
    const der = openssl(['x509', '-in', certPath, '-outform', 'DER']);
    return {
      name,
      certPath,
      keyPath,
      pem,
      der,
      thumbprint: createHash('sha1').update(der).digest('hex').toUpperCase(),
    };
  }
}

/** What the client does with EncryptedKey: `openssl cms -decrypt` with its certificate and key. */
export function decryptEncryptedKey(encryptedKeyBase64: string, user: Issued): Buffer {
  return openssl(
    ['cms', '-decrypt', '-inform', 'DER', '-recip', user.certPath, '-inkey', user.keyPath, '-binary'],
    Buffer.from(encryptedKeyBase64, 'base64'),
  );
}
