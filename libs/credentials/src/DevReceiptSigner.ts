import { createPublicKey, generateKeyPairSync, randomBytes, webcrypto, type KeyObject } from 'node:crypto';
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';

const DAY = 24 * 3600 * 1000;

/**
 * The local stack's receipt signing key and its self-signed certificate, as PEM files beside the
 * dev token key, made on first use: an EC P-256 key, the certificate valid ten years. The stack
 * gives them to the content-service (RECEIPT_SIGNING_KEY_FILE, RECEIPT_CERTIFICATE_FILE); a
 * receipt verifies with `openssl cms -verify ... -CAfile <certificateFile>`. Never for production.
 */
export class DevReceiptSigner {
  constructor(private readonly dir: string) {}

  get keyFile(): string {
    return join(this.dir, 'receipt-signer.key');
  }

  get certificateFile(): string {
    return join(this.dir, 'receipt-signer.pem');
  }

  async ensure(): Promise<void> {
    if (existsSync(this.keyFile) && existsSync(this.certificateFile)) return;
    mkdirSync(this.dir, { recursive: true });
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const now = Date.now();
    const certificate = await selfSignedCertificate(privateKey, {
      commonName: 'Content Platform receipts (local development)',
      notBefore: new Date(now - DAY),
      notAfter: new Date(now + 3650 * DAY),
    });
    // Each file appears whole (a stack starting alongside never reads half of one); the key first.
    const place = (file: string, text: string, mode: number) => {
      const part = `${file}.${process.pid}.tmp`;
      writeFileSync(part, text, { mode });
      renameSync(part, file);
    };
    place(this.keyFile, privateKey.export({ type: 'pkcs8', format: 'pem' }) as string, 0o600);
    place(this.certificateFile, certificate, 0o644);
  }
}

/**
 * A self-signed X.509 certificate (PEM) for the private `key` (RSA or EC P-256), signed with SHA-256, for
 * signing only: keyUsage digitalSignature, not a CA.
 */
export async function selfSignedCertificate(
  key: KeyObject,
  opts: { commonName: string; notBefore: Date; notAfter: Date },
): Promise<string> {
  const algorithm =
    key.asymmetricKeyType === 'rsa'
      ? { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' }
      : key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1'
        ? { name: 'ECDSA', namedCurve: 'P-256' }
        : null;
  if (!algorithm) throw new TypeError('the key must be RSA or EC P-256');
  const signingKey = await webcrypto.subtle.importKey(
    'pkcs8',
    key.export({ type: 'pkcs8', format: 'der' }),
    algorithm,
    false,
    ['sign'],
  );
  const spki = new Uint8Array(createPublicKey(key).export({ type: 'spki', format: 'der' }));
  const certificate = new pkijs.Certificate();
  certificate.version = 2;
  // A positive serial of 16 random bytes whose first byte is not 0 (DER's shortest form).
  const serial = randomBytes(16);
  serial[0] = (serial[0]! & 0x7f) | 0x40;
  certificate.serialNumber = new asn1js.Integer({ valueHex: new Uint8Array(serial).buffer });
  const name = () =>
    new pkijs.RelativeDistinguishedNames({
      typesAndValues: [
        new pkijs.AttributeTypeAndValue({ type: '2.5.4.3', value: new asn1js.Utf8String({ value: opts.commonName }) }),
      ],
    });
  certificate.subject = name();
  certificate.issuer = name();
  certificate.notBefore.value = opts.notBefore;
  certificate.notAfter.value = opts.notAfter;
  certificate.subjectPublicKeyInfo = new pkijs.PublicKeyInfo({ schema: asn1js.fromBER(spki.buffer).result });
  const basicConstraints = new pkijs.BasicConstraints({ cA: false });
  const digitalSignature = new asn1js.BitString({ valueHex: new Uint8Array([0x80]).buffer, unusedBits: 7 });
  certificate.extensions = [
    new pkijs.Extension({
      extnID: '2.5.29.19',
      critical: true,
      extnValue: basicConstraints.toSchema().toBER(false),
      parsedValue: basicConstraints,
    }),
    new pkijs.Extension({
      extnID: '2.5.29.15',
      critical: true,
      extnValue: digitalSignature.toBER(false),
      parsedValue: digitalSignature,
    }),
  ];
  await certificate.sign(signingKey, 'SHA-256');
  const der = Buffer.from(certificate.toSchema(true).toBER(false));
  const lines = der.toString('base64').match(/.{1,64}/g)!;
  return `-----BEGIN CERTIFICATE-----\n${lines.join('\n')}\n-----END CERTIFICATE-----\n`;
}
