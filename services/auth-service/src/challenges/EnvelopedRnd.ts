import { ContentInfo, EnvelopedData, type Certificate } from 'pkijs';

const RSA = '1.2.840.113549.1.1.1';
const EC = '1.2.840.10045.2.1';
const SUPPORTED_CURVES = new Set(['1.2.840.10045.3.1.7', '1.3.132.0.34', '1.3.132.0.35']); // P-256, P-384, P-521

/** The certificate's key cannot receive an EncryptedKey (algorithm or curve not supported). */
export class UnsupportedKey extends Error {
  override readonly name = 'UnsupportedKey';
  readonly code = 'CP_ERR_UNSUPPORTED_KEY';
}

/**
 * EncryptedKey: a DER CMS EnvelopedData of `rnd` for the certificate, which
 * `openssl cms -decrypt -inform DER -recip cert.pem -inkey key.pem -binary` opens.
 * RSA: RSA-OAEP (SHA-256) key transport; EC: ECDH (SHA-256 KDF, AES-256 key wrap). Content:
 * AES-256-CBC (never GCM: OpenSSL cannot open pkijs's GCM). Definite lengths throughout.
 */
export async function envelopeFor(cert: Certificate, rnd: Uint8Array): Promise<Buffer> {
  const keyAlgorithm = cert.subjectPublicKeyInfo.algorithm.algorithmId;
  const enveloped = new EnvelopedData({ disableSplit: true });
  if (keyAlgorithm === RSA) {
    enveloped.addRecipientByCertificate(cert, { oaepHashAlgorithm: 'SHA-256' }, 1);
  } else if (keyAlgorithm === EC) {
    const params = cert.subjectPublicKeyInfo.algorithm.algorithmParams as
      { valueBlock?: { toString(): string } } | undefined;
    const curve = params?.valueBlock?.toString();
    if (!curve || !SUPPORTED_CURVES.has(curve))
      throw new UnsupportedKey(`EC curve ${curve ?? '(none)'} is not supported; use P-256, P-384 or P-521`);
    enveloped.addRecipientByCertificate(cert, { kdfAlgorithm: 'SHA-256', kekEncryptionLength: 256 }, 2);
  } else {
    throw new UnsupportedKey(`key algorithm ${keyAlgorithm} is not supported; use RSA or EC`);
  }
  try {
    await enveloped.encrypt(
      { name: 'AES-CBC', length: 256 } as Parameters<EnvelopedData['encrypt']>[0],
      new Uint8Array(rnd).buffer,
    );
  } catch (error) {
    // WebCrypto's word for a public key it cannot import (an EC point off its curve, say): the
    // certificate's fault, as a curve it does not know would be.
    if ((error as Error)?.name === 'DataError')
      throw new UnsupportedKey(`the certificate's public key cannot be used: ${(error as Error).message}`);
    throw error;
  }
  const info = new ContentInfo({ contentType: ContentInfo.ENVELOPED_DATA, content: enveloped.toSchema() });
  return Buffer.from(info.toSchema().toBER(false));
}
