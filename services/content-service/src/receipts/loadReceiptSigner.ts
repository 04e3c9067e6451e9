import { createPrivateKey, createPublicKey, X509Certificate, type KeyObject } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { ConfigError } from '@cp/config';
import * as pkijs from 'pkijs';
import { ReceiptSigner, signingAlgorithm } from './ReceiptSigner';

const KEY = 'RECEIPT_SIGNING_KEY_FILE';
const CERTIFICATE = 'RECEIPT_CERTIFICATE_FILE';

/** The two settings of receipt signing, both or neither (loadConfig has checked that). */
export interface ReceiptSignerFiles {
  RECEIPT_SIGNING_KEY_FILE?: string;
  RECEIPT_CERTIFICATE_FILE?: string;
}

/** What the start-up log says of the signer: never anything of its key. */
export interface LoadedReceiptSigner {
  signer: ReceiptSigner;
  subject: string;
  notAfter: Date;
  /** SHA-256 of the signer certificate's DER, hex with colons (as openssl x509 -fingerprint -sha256 prints it). */
  fingerprint: string;
}

/**
 * The receipt signer the configuration names, or null when it names none (receipts then answer
 * 501). Checked once, at start-up, each problem a ConfigError naming the variable whose file is at
 * fault: a file that cannot be read, a certificate that is not one or is not valid at `now`, or
 * whose keyUsage forbids signing; a key that is not an unencrypted PEM private key, not RSA (2048
 * bits or more) or EC P-256, or not the certificate's. The key is never printed.
 */
export async function loadReceiptSigner(files: ReceiptSignerFiles, now: Date): Promise<LoadedReceiptSigner | null> {
  const keyFile = files.RECEIPT_SIGNING_KEY_FILE;
  const certificateFile = files.RECEIPT_CERTIFICATE_FILE;
  if (!keyFile || !certificateFile) return null;

  const chain = certificatesIn(await read(CERTIFICATE, certificateFile));
  const certificate = chain[0]!;
  const subject = certificate.subject.replace(/\n/g, ', ');
  if (now < new Date(certificate.validFrom) || now > new Date(certificate.validTo))
    throw new ConfigError(
      CERTIFICATE,
      `the certificate of ${subject} is valid from ${certificate.validFrom} to ${certificate.validTo}, not now: receipts signed with it would not verify`,
    );
  if (!maySign(certificate.raw))
    throw new ConfigError(CERTIFICATE, `the keyUsage of ${subject} allows neither digitalSignature nor nonRepudiation`);

  let key: KeyObject;
  try {
    key = createPrivateKey(await read(KEY, keyFile));
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    throw new ConfigError(KEY, `${keyFile} is not an unencrypted private key in PEM (PKCS#8, PKCS#1 or SEC1)`);
  }
  const bits = key.asymmetricKeyDetails?.modulusLength ?? 0;
  if (!signingAlgorithm(key) || (key.asymmetricKeyType === 'rsa' && bits < 2048))
    throw new ConfigError(
      KEY,
      `holds ${key.asymmetricKeyType === 'rsa' ? `a ${bits}-bit RSA` : `an ${key.asymmetricKeyType}`} key: use RSA of 2048 bits or more, or EC P-256`,
    );
  const spki = (k: KeyObject) => k.export({ type: 'spki', format: 'der' });
  if (!spki(createPublicKey(key)).equals(spki(certificate.publicKey)))
    throw new ConfigError(KEY, `is not the private key of the certificate in ${CERTIFICATE} (${subject})`);

  return {
    signer: await ReceiptSigner.create(
      key,
      chain.map((c) => c.raw),
    ),
    subject,
    notAfter: new Date(certificate.validTo),
    fingerprint: certificate.fingerprint256,
  };
}

async function read(variable: string, file: string): Promise<Buffer> {
  try {
    return await readFile(file);
  } catch (error) {
    throw new ConfigError(variable, `${file} cannot be read (${(error as NodeJS.ErrnoException).code ?? error})`);
  }
}

/** The certificates of a PEM file (the signer's first, then any intermediates), or of a DER file. */
function certificatesIn(file: Buffer): X509Certificate[] {
  const blocks = [
    ...file.toString('latin1').matchAll(/-----BEGIN CERTIFICATE-----([\s\S]+?)-----END CERTIFICATE-----/g),
  ];
  const ders = blocks.length > 0 ? blocks.map((m) => Buffer.from(m[1]!.replace(/\s+/g, ''), 'base64')) : [file];
  return ders.map((der, i) => {
    try {
      return new X509Certificate(der);
    } catch {
      throw new ConfigError(
        CERTIFICATE,
        blocks.length > 0
          ? `certificate ${i + 1} of the file cannot be read`
          : 'holds no certificate: PEM (the signer first, then any intermediates) or DER',
      );
    }
  });
}

/** Whether the certificate's keyUsage, when it has one, allows signing (digitalSignature or nonRepudiation). */
function maySign(der: Buffer): boolean {
  const certificate = pkijs.Certificate.fromBER(new Uint8Array(der));
  const usage = certificate.extensions?.find((e) => e.extnID === '2.5.29.15')?.parsedValue as
    { valueBlock: { valueHexView: Uint8Array } } | undefined;
  if (!usage) return true;
  return ((usage.valueBlock.valueHexView[0] ?? 0) & 0xc0) !== 0;
}
