import { createPrivateKey, createPublicKey, X509Certificate, type KeyObject } from 'node:crypto';
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
  // pkijs runs on the global WebCrypto (Node.js 19 and later), which it takes by itself at import.
  const der = Buffer.from(encryptedKeyBase64, 'base64');
  const contentInfo = pkijs.ContentInfo.fromBER(toArrayBuffer(der));
  const enveloped = new pkijs.EnvelopedData({ schema: contentInfo.content });
  const certDer = certificateDer(certificate);
  const recipientCertificate = pkijs.Certificate.fromBER(toArrayBuffer(certDer));
  const pkcs8 = readPrivateKey(privateKeyPem).export({ type: 'pkcs8', format: 'der' });
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
