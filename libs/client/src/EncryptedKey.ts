import {
  constants,
  createDecipheriv,
  createPrivateKey,
  createPublicKey,
  privateDecrypt,
  X509Certificate,
  type KeyObject,
} from 'node:crypto';
import * as asn1js from 'asn1js';
import { CredentialsFileError } from './errors';
import * as pkijs from 'pkijs';

/** DER of the first certificate in a PEM text (or the bytes themselves when they are DER). */
export function certificateDer(certificate: string | Buffer): Buffer {
  const text = Buffer.isBuffer(certificate) ? certificate.toString('latin1') : certificate;
  const m = /-----BEGIN CERTIFICATE-----([\s\S]+?)-----END CERTIFICATE-----/.exec(text);
  if (m) return Buffer.from(m[1]!.replace(/\s+/g, ''), 'base64');
  if (Buffer.isBuffer(certificate)) return certificate;
  throw new CredentialsFileError('the certificate file holds no PEM certificate');
}

/** Reads a private key (PEM PKCS#8, PKCS#1 or SEC1, unencrypted). */
export function readPrivateKey(privateKeyPem: string | Buffer): KeyObject {
  try {
    return createPrivateKey(privateKeyPem);
  } catch (error) {
    throw new CredentialsFileError('the key file is not an unencrypted private key in PEM (PKCS#8, PKCS#1 or SEC1)', {
      cause: error,
    });
  }
}

/** Refuses, before any request, a key that does not belong to the certificate. */
export function checkKeyPair(certificate: string | Buffer, privateKeyPem: string | Buffer): void {
  let certKey: KeyObject;
  try {
    certKey = new X509Certificate(certificateDer(certificate)).publicKey;
  } catch (error) {
    throw new CredentialsFileError('the certificate file holds no readable certificate (PEM or DER)', { cause: error });
  }
  const own = createPublicKey(readPrivateKey(privateKeyPem)).export({ type: 'spki', format: 'der' });
  if (!own.equals(certKey.export({ type: 'spki', format: 'der' })))
    throw new CredentialsFileError('the private key does not belong to the certificate');
}

/**
 * Opens the sign-in challenge (a DER CMS EnvelopedData, base64) with the user's certificate and
 * private key (PEM, PKCS#8 or PKCS#1/SEC1): the rnd bytes to send back to approve-cert.
 */
export async function decryptEncryptedKey(
  encryptedKeyBase64: string,
  certificate: string | Buffer,
  privateKeyPem: string | Buffer,
): Promise<Buffer> {
  const der = Buffer.from(encryptedKeyBase64, 'base64');
  const key = readPrivateKey(privateKeyPem);
  // RSA key transport, what the auth-service sends an RSA certificate: opened with node:crypto
  // (about a quarter of pkijs's CPU); any other form of EnvelopedData by pkijs.
  const transported = keyTransport(der, key);
  if (transported) {
    try {
      return openKeyTransport(transported, key);
    } catch (error) {
      throw new CredentialsFileError(
        `the sign-in challenge could not be opened with this key (${(error as Error)?.message ?? error})`,
        { cause: error },
      );
    }
  }
  // pkijs runs on the global WebCrypto (Node.js 19 and later), which it takes by itself at import.
  const contentInfo = pkijs.ContentInfo.fromBER(toArrayBuffer(der));
  const enveloped = new pkijs.EnvelopedData({ schema: contentInfo.content });
  const certDer = certificateDer(certificate);
  const recipientCertificate = pkijs.Certificate.fromBER(toArrayBuffer(certDer));
  const pkcs8 = key.export({ type: 'pkcs8', format: 'der' });
  try {
    const plain = await enveloped.decrypt(0, { recipientCertificate, recipientPrivateKey: toArrayBuffer(pkcs8) });
    return Buffer.from(plain);
  } catch (error) {
    throw new CredentialsFileError(
      `the sign-in challenge could not be opened with this key (${(error as Error)?.message ?? error})`,
      { cause: error },
    );
  }
}

function toArrayBuffer(b: Buffer): ArrayBuffer {
  return b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer;
}

const OID = {
  envelopedData: '1.2.840.113549.1.7.3',
  rsaesOaep: '1.2.840.113549.1.1.7',
  mgf1: '1.2.840.113549.1.1.8',
  pSpecified: '1.2.840.113549.1.1.9',
} as const;
/** The hashes RSAES-OAEP may name, by OID (absent: SHA-1, RFC 8017 A.2.1). */
const OAEP_HASHES: Record<string, string> = {
  '1.3.14.3.2.26': 'sha1',
  '2.16.840.1.101.3.4.2.1': 'sha256',
  '2.16.840.1.101.3.4.2.2': 'sha384',
  '2.16.840.1.101.3.4.2.3': 'sha512',
};
/** AES-CBC content encryption by OID: node:crypto's cipher name and key length. */
const CONTENT_CIPHERS: Record<string, { cipher: string; keyBytes: number }> = {
  '2.16.840.1.101.3.4.1.2': { cipher: 'aes-128-cbc', keyBytes: 16 },
  '2.16.840.1.101.3.4.1.22': { cipher: 'aes-192-cbc', keyBytes: 24 },
  '2.16.840.1.101.3.4.1.42': { cipher: 'aes-256-cbc', keyBytes: 32 },
};

/** An EnvelopedData's first recipient when it is RSAES-OAEP key transport, and its AES-CBC content. */
interface KeyTransport {
  oaepHash: string;
  encryptedKey: Buffer;
  cipher: string;
  keyBytes: number;
  iv: Buffer;
  encryptedContent: Buffer;
}

/**
 * The parts of a DER ContentInfo that RSAES-OAEP key transport with AES-CBC content needs
 * (RFC 5652 6.1, 6.2.1; RFC 8017 A.2.1), for an RSA private key; null for any other shape, which
 * pkijs then reads (and refuses, when it is not an EnvelopedData at all).
 */
function keyTransport(der: Buffer, key: KeyObject): KeyTransport | null {
  if (key.asymmetricKeyType !== 'rsa') return null;
  const parsed = asn1js.fromBER(new Uint8Array(der));
  if (parsed.offset === -1 || parsed.offset !== der.length) return null;
  const info = children(parsed.result, 2);
  if (!info || oid(info[0]) !== OID.envelopedData) return null;
  const explicit = tagged(info[1], 0);
  const enveloped = explicit && children(explicit[0]);
  if (!enveloped || enveloped.length < 3) return null;
  // version, [0] originatorInfo?, recipientInfos, encryptedContentInfo, [1] unprotectedAttrs?
  let at = 1;
  if (tagged(enveloped[at], 0)) at++;
  const recipients = enveloped[at] instanceof asn1js.Set ? children(enveloped[at]) : null;
  const content = children(enveloped[at + 1]);
  const ktri = recipients && recipients[0] instanceof asn1js.Sequence ? children(recipients[0], 4) : null;
  if (!ktri || !content || content.length !== 3) return null;
  const algorithm = children(ktri[2]);
  if (!algorithm || oid(algorithm[0]) !== OID.rsaesOaep) return null;
  const oaepHash = oaepHashOf(algorithm[1]);
  const encryptedKey = octets(ktri[3]);
  const contentAlgorithm = children(content[1], 2);
  const cipher = contentAlgorithm ? CONTENT_CIPHERS[oid(contentAlgorithm[0]) ?? ''] : undefined;
  const iv = contentAlgorithm && octets(contentAlgorithm[1]);
  const encryptedContent = implicitOctets(content[2]);
  if (!oaepHash || !encryptedKey || !cipher || !iv || iv.length !== 16 || !encryptedContent) return null;
  return { oaepHash, encryptedKey, ...cipher, iv, encryptedContent };
}

function openKeyTransport(t: KeyTransport, key: KeyObject): Buffer {
  const contentKey = privateDecrypt(
    { key, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: t.oaepHash },
    t.encryptedKey,
  );
  if (contentKey.length !== t.keyBytes) throw new Error(`a content key of ${contentKey.length} bytes`);
  const decipher = createDecipheriv(t.cipher, contentKey, t.iv);
  return Buffer.concat([decipher.update(t.encryptedContent), decipher.final()]);
}

/** RSAES-OAEP-params: the hash, when MGF1 uses the same one and the label is empty; else null. */
function oaepHashOf(params: asn1js.AsnType | undefined): string | null {
  let hash = 'sha1';
  let mgfHash = 'sha1';
  const fields = params === undefined || params instanceof asn1js.Null ? [] : children(params);
  if (!fields) return null;
  for (const field of fields) {
    const tag = field.idBlock.tagClass === 3 ? field.idBlock.tagNumber : -1;
    const inner = tagged(field, tag)?.[0];
    const alg = children(inner);
    if (!alg) return null;
    if (tag === 0) {
      const named = OAEP_HASHES[oid(alg[0]) ?? ''];
      if (!named) return null;
      hash = named;
    } else if (tag === 1) {
      const mgfAlg = oid(alg[0]) === OID.mgf1 ? children(alg[1]) : null;
      const named = mgfAlg ? OAEP_HASHES[oid(mgfAlg[0]) ?? ''] : undefined;
      if (!named) return null;
      mgfHash = named;
    } else if (tag === 2) {
      const label = oid(alg[0]) === OID.pSpecified ? octets(alg[1]) : null;
      if (!label || label.length !== 0) return null;
    } else return null;
  }
  return hash === mgfHash ? hash : null;
}

function children(node: asn1js.AsnType | undefined, length?: number): asn1js.AsnType[] | null {
  if (!(node instanceof asn1js.Sequence || node instanceof asn1js.Set || node instanceof asn1js.Constructed))
    return null;
  const value = node.valueBlock.value as asn1js.AsnType[];
  return length === undefined || value.length === length ? value : null;
}

function tagged(node: asn1js.AsnType | undefined, tag: number): asn1js.AsnType[] | null {
  if (!node || node.idBlock.tagClass !== 3 || node.idBlock.tagNumber !== tag || !node.idBlock.isConstructed)
    return null;
  return children(node);
}

function oid(node: asn1js.AsnType | undefined): string | null {
  return node instanceof asn1js.ObjectIdentifier ? node.valueBlock.toString() : null;
}

function octets(node: asn1js.AsnType | undefined): Buffer | null {
  return node instanceof asn1js.OctetString && !node.idBlock.isConstructed
    ? Buffer.from(node.valueBlock.valueHexView)
    : null;
}

/** encryptedContent [0] IMPLICIT OCTET STRING, primitive or (BER) in pieces. */
function implicitOctets(node: asn1js.AsnType | undefined): Buffer | null {
  if (!node || node.idBlock.tagClass !== 3 || node.idBlock.tagNumber !== 0) return null;
  if (!node.idBlock.isConstructed) return Buffer.from((node as asn1js.Primitive).valueBlock.valueHexView);
  const pieces = children(node);
  if (!pieces) return null;
  const bytes = pieces.map(octets);
  return bytes.every((b) => b !== null) ? Buffer.concat(bytes as Buffer[]) : null;
}
