import { X509Certificate, type KeyObject } from 'node:crypto';
import * as asn1js from 'asn1js';
import { AuthorityKeyIdentifier, BasicConstraints, type Certificate } from 'pkijs';

const RSA = '1.2.840.113549.1.1.1';
const EC = '1.2.840.10045.2.1';

/** Signature algorithms whose hash no longer resists collisions: MD2, MD5, SHA-1 with RSA, ECDSA, DSA. */
const WEAK_SIGNATURES: Record<string, string> = {
  '1.2.840.113549.1.1.2': 'MD2 with RSA',
  '1.2.840.113549.1.1.4': 'MD5 with RSA',
  '1.2.840.113549.1.1.5': 'SHA-1 with RSA',
  '1.3.14.3.2.29': 'SHA-1 with RSA',
  '1.2.840.10045.4.1': 'ECDSA with SHA-1',
  '1.2.840.10040.4.3': 'DSA with SHA-1',
};

/** The key usage bits sign-in cares about (RFC 5280 §4.2.1.3). */
export interface KeyUsage {
  keyEncipherment: boolean;
  keyAgreement: boolean;
  keyCertSign: boolean;
}

/**
 * What path building and the policy need from a certificate, read once. Anything that cannot be
 * read is reported as absent or as `malformed`, never thrown: the input comes from clients.
 */
export interface CertificateFacts {
  /** DER of the subject and issuer names, hex: compared byte for byte (RFC 5280 name chaining). */
  subjectKey: string;
  issuerKey: string;
  /** Readable DN, for messages. */
  subject: string;
  issuer: string;
  notBefore: Date;
  notAfter: Date;
  /** basicConstraints cA; false when the extension is absent. */
  isCa: boolean;
  /** basicConstraints pathLenConstraint, when present. */
  pathLen?: number;
  keyUsage?: KeyUsage;
  /** Subject key identifier and authority key identifier's keyIdentifier, hex. */
  ski?: string;
  aki?: string;
  keyKind: 'rsa' | 'ec' | 'other';
  /** RSA modulus length in bits. */
  rsaBits?: number;
  /** The name of a weak signature algorithm, when the certificate is signed with one. */
  weakSignature?: string;
  /** An extension sign-in relies on could not be decoded. */
  malformed?: string;
}

const NAMES: Record<string, string> = {
  '2.5.4.3': 'CN',
  '2.5.4.10': 'O',
  '2.5.4.11': 'OU',
  '2.5.4.6': 'C',
  '2.5.4.7': 'L',
  '2.5.4.8': 'ST',
};

/** A distinguished name as `CN=..., O=...` (for messages and the admin command line). */
export function dnText(name: Certificate['subject']): string {
  try {
    return name.typesAndValues
      .map((tv) => `${NAMES[tv.type] ?? tv.type}=${String(tv.value?.valueBlock?.value ?? '')}`)
      .join(', ');
  } catch {
    return '(unreadable name)';
  }
}

export function factsOf(cert: Certificate, der: Buffer): CertificateFacts {
  const facts: CertificateFacts = {
    subjectKey: nameKey(cert.subject),
    issuerKey: nameKey(cert.issuer),
    subject: dnText(cert.subject),
    issuer: dnText(cert.issuer),
    notBefore: dateOf(cert.notBefore),
    notAfter: dateOf(cert.notAfter),
    isCa: false,
    keyKind: 'other',
  };
  const keyAlgorithm = cert.subjectPublicKeyInfo?.algorithm?.algorithmId;
  if (keyAlgorithm === RSA) facts.keyKind = 'rsa';
  else if (keyAlgorithm === EC) facts.keyKind = 'ec';
  facts.weakSignature = WEAK_SIGNATURES[cert.signatureAlgorithm?.algorithmId ?? ''];
  for (const ext of cert.extensions ?? []) {
    try {
      switch (ext.extnID) {
        case '2.5.29.19': {
          const bc = ext.parsedValue as BasicConstraints | undefined;
          if (!(bc instanceof BasicConstraints)) throw new Error('basicConstraints');
          facts.isCa = bc.cA === true;
          if (bc.pathLenConstraint !== undefined) {
            const n =
              typeof bc.pathLenConstraint === 'number'
                ? bc.pathLenConstraint
                : bc.pathLenConstraint.valueBlock.valueDec;
            if (!Number.isSafeInteger(n) || n < 0) throw new Error('pathLenConstraint');
            facts.pathLen = n;
          }
          break;
        }
        case '2.5.29.15': {
          const bits = ext.parsedValue as asn1js.BitString | undefined;
          if (!(bits instanceof asn1js.BitString)) throw new Error('keyUsage');
          const first = bits.valueBlock.valueHexView[0] ?? 0;
          facts.keyUsage = {
            keyEncipherment: (first & 0x20) !== 0,
            keyAgreement: (first & 0x08) !== 0,
            keyCertSign: (first & 0x04) !== 0,
          };
          break;
        }
        case '2.5.29.14': {
          const id = ext.parsedValue as asn1js.OctetString | undefined;
          if (!(id instanceof asn1js.OctetString)) throw new Error('subjectKeyIdentifier');
          facts.ski = Buffer.from(id.valueBlock.valueHexView).toString('hex');
          break;
        }
        case '2.5.29.35': {
          const aki = ext.parsedValue as AuthorityKeyIdentifier | undefined;
          if (!(aki instanceof AuthorityKeyIdentifier)) throw new Error('authorityKeyIdentifier');
          if (aki.keyIdentifier) facts.aki = Buffer.from(aki.keyIdentifier.valueBlock.valueHexView).toString('hex');
          break;
        }
      }
    } catch {
      facts.malformed ??= `its ${ext.extnID} extension cannot be read`;
    }
  }
  if (facts.keyKind === 'rsa') facts.rsaBits = rsaBitsOf(cert, der);
  return facts;
}

function nameKey(name: Certificate['subject']): string {
  try {
    return Buffer.from(name.toSchema().toBER(false)).toString('hex');
  } catch {
    return `unreadable:${Math.random()}`; // matches nothing
  }
}

function dateOf(time: Certificate['notBefore']): Date {
  const value = time?.value;
  return value instanceof Date && !Number.isNaN(value.getTime()) ? value : new Date(NaN);
}

/** A certificate as OpenSSL reads it, and its public key, by its DER: made once per certificate. */
const opensslViews = new WeakMap<Buffer, { x509: X509Certificate; key: KeyObject } | null>();

/**
 * The certificate in `der` as OpenSSL reads it, with its public key; null when OpenSSL cannot read
 * either. Kept for as long as the DER buffer lives (a trust anchor's, for as long as it is cached).
 */
export function opensslView(der: Buffer): { x509: X509Certificate; key: KeyObject } | null {
  let view = opensslViews.get(der);
  if (view === undefined) {
    try {
      const x509 = new X509Certificate(der);
      view = { x509, key: x509.publicKey };
    } catch {
      view = null;
    }
    opensslViews.set(der, view);
  }
  return view;
}

function rsaBitsOf(cert: Certificate, der: Buffer): number | undefined {
  const bits = opensslView(der)?.key.asymmetricKeyDetails?.modulusLength;
  if (bits) return bits;
  // else pkijs's reading of the key
  try {
    const parsed = cert.subjectPublicKeyInfo.parsedKey as { modulus?: asn1js.Integer } | undefined;
    const bytes = parsed?.modulus?.valueBlock.valueHexView;
    if (!bytes) return undefined;
    let i = 0;
    while (i < bytes.length && bytes[i] === 0) i++;
    if (i === bytes.length) return 0;
    return (bytes.length - i) * 8 - (Math.clz32(bytes[i]!) - 24);
  } catch {
    return undefined;
  }
}
