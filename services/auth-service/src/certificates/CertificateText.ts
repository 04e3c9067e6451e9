import { createHash } from 'node:crypto';
import * as asn1js from 'asn1js';
import { Certificate } from 'pkijs';
import { factsOf, type CertificateFacts } from './CertificateFacts';

/** The body is not a certificate in any of the accepted forms. */
export class CertUnreadable extends Error {
  override readonly name = 'CertUnreadable';
  readonly code = 'CP_ERR_CERT_UNREADABLE';
}

/** The body holds more certificates than a chain may have. */
export class TooManyCertificates extends Error {
  override readonly name = 'TooManyCertificates';
  readonly code = 'CP_ERR_TOO_MANY_CERTIFICATES';
}

/** Most certificates one body may hold: the leaf and its intermediates (and perhaps the root). */
export const MAX_CERTIFICATES = 10;

export interface ParsedCertificate {
  der: Buffer;
  cert: Certificate;
  /** SHA-1 of the DER, upper-case hex. */
  thumbprint: string;
  /** What path building and the policy read from it. */
  facts: CertificateFacts;
}

const BEGIN = Buffer.from('-----BEGIN CERTIFICATE-----');
const PEM_BLOCK = /-----BEGIN CERTIFICATE-----([\s\S]*?)-----END CERTIFICATE-----/g;
const BASE64 = /^[A-Za-z0-9+/=\s]+$/;

/**
 * Reads a certificate body: PEM (leaf first, intermediates may follow), bare base64 or DER.
 * Returns the certificates in the order given.
 */
export function parseCertificates(body: Buffer, maxCertificates = MAX_CERTIFICATES): ParsedCertificate[] {
  if (body.length === 0) throw new CertUnreadable('empty body');
  // Counted before anything is decoded: a body of hundreds of certificates costs one scan.
  if (body[0] !== 0x30) {
    let count = 0;
    for (let at = body.indexOf(BEGIN); at !== -1; at = body.indexOf(BEGIN, at + BEGIN.length)) {
      if (++count > maxCertificates)
        throw new TooManyCertificates(
          `the body holds more than ${maxCertificates} certificates; send the certificate and its intermediates only`,
        );
    }
  }
  const ders: Buffer[] = [];
  if (body[0] === 0x30) {
    ders.push(body); // DER: a SEQUENCE
  } else {
    const text = body.toString('latin1');
    if (text.includes('-----BEGIN')) {
      for (const m of text.matchAll(PEM_BLOCK)) ders.push(decodeBase64(m[1]!));
      if (ders.length === 0) throw new CertUnreadable('no CERTIFICATE block in the PEM text');
    } else if (BASE64.test(text)) {
      ders.push(decodeBase64(text));
    } else {
      throw new CertUnreadable('neither PEM, base64 nor DER');
    }
  }
  return ders.map(parseDer);
}

/** No real certificate comes near this; anything larger is not decoded at all. */
export const MAX_CERTIFICATE_BYTES = 64 * 1024;

export function parseDer(der: Buffer): ParsedCertificate {
  // Decoding cost grows with the element count: a 2 MiB body of tiny elements costs ~70 ms.
  if (der.length > MAX_CERTIFICATE_BYTES)
    throw new CertUnreadable(`larger than ${MAX_CERTIFICATE_BYTES} bytes: not a certificate`);
  let cert: Certificate;
  let facts: CertificateFacts;
  try {
    const asn1 = asn1js.fromBER(new Uint8Array(der).buffer);
    if (asn1.offset === -1 || asn1.offset !== der.length) throw new CertUnreadable('not a single DER structure');
    cert = new Certificate({ schema: asn1.result });
    facts = factsOf(cert, der);
  } catch (error) {
    if (error instanceof CertUnreadable) throw error;
    // Whatever pkijs or asn1js throw on hostile input (not always an Error) means unreadable.
    throw new CertUnreadable(`not an X.509 certificate: ${(error as Error)?.message ?? String(error)}`);
  }
  return { der, cert, thumbprint: thumbprintOf(der), facts };
}

export function thumbprintOf(der: Buffer): string {
  return createHash('sha1').update(der).digest('hex').toUpperCase();
}

function decodeBase64(text: string): Buffer {
  const clean = text.replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(clean) || clean.length % 4 !== 0 || clean.length === 0)
    throw new CertUnreadable('bad base64');
  return Buffer.from(clean, 'base64');
}
