import { constants, createCipheriv, createPublicKey, publicEncrypt, randomBytes } from 'node:crypto';
import * as asn1js from 'asn1js';
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
  if (keyAlgorithm === RSA) return rsaEnvelope(cert, rnd);
  const enveloped = new EnvelopedData({ disableSplit: true });
  if (keyAlgorithm === EC) {
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

const OID = {
  envelopedData: '1.2.840.113549.1.7.3',
  data: '1.2.840.113549.1.7.1',
  rsaesOaep: '1.2.840.113549.1.1.7',
  mgf1: '1.2.840.113549.1.1.8',
  sha256: '2.16.840.1.101.3.4.2.1',
  aes256Cbc: '2.16.840.1.101.3.4.1.42',
} as const;

const oid = (value: string) => new asn1js.ObjectIdentifier({ value });
const sha256Algorithm = () => new asn1js.Sequence({ value: [oid(OID.sha256), new asn1js.Null()] });
const explicit = (tagNumber: number, value: asn1js.AsnType) =>
  new asn1js.Constructed({ idBlock: { tagClass: 3, tagNumber }, value: [value] });
const ber = (block: asn1js.AsnType) => Buffer.from(block.toBER(false));

/** The parts that never change, encoded once. */
const FIXED = {
  envelopedData: ber(oid(OID.envelopedData)),
  data: ber(oid(OID.data)),
  aes256Cbc: ber(oid(OID.aes256Cbc)),
  version0: ber(new asn1js.Integer({ value: 0 })),
  // RSAES-OAEP with SHA-256 and MGF1 with SHA-256 (RFC 8017 A.2.1), the empty label by default.
  oaepAlgorithm: ber(
    new asn1js.Sequence({
      value: [
        oid(OID.rsaesOaep),
        new asn1js.Sequence({
          value: [
            explicit(0, sha256Algorithm()),
            explicit(1, new asn1js.Sequence({ value: [oid(OID.mgf1), sha256Algorithm()] })),
          ],
        }),
      ],
    }),
  ),
};

/** A DER element: its tag, its definite length and its content. */
function tlv(tag: number, ...content: Uint8Array[]): Buffer {
  const body = Buffer.concat(content);
  const n = body.length;
  const length =
    n < 0x80
      ? [n]
      : n < 0x100
        ? [0x81, n]
        : n < 0x10000
          ? [0x82, n >> 8, n & 0xff]
          : [0x83, n >> 16, (n >> 8) & 0xff, n & 0xff];
  return Buffer.concat([Buffer.from([tag, ...length]), body]);
}
const SEQUENCE = 0x30;
const SET = 0x31;
const OCTET_STRING = 0x04;
const CONTEXT_0_CONSTRUCTED = 0xa0;
const CONTEXT_0_PRIMITIVE = 0x80;

/**
 * The RSA case with node:crypto (the same DER structure pkijs writes, with the version RFC 5652
 * 6.1 gives key transport alone, 0): the content key wrapped by RSAES-OAEP with SHA-256 and MGF1
 * SHA-256 for the certificate's issuer and serial number (their bytes as the certificate has
 * them), `rnd` in AES-256-CBC under it. A fifth of pkijs's CPU per challenge.
 */
function rsaEnvelope(cert: Certificate, rnd: Uint8Array): Buffer {
  let publicKey;
  try {
    const spki = cert.subjectPublicKeyInfo.toSchema().toBER(false);
    publicKey = createPublicKey({ key: Buffer.from(spki), format: 'der', type: 'spki' });
  } catch (error) {
    throw new UnsupportedKey(`the certificate's public key cannot be used: ${(error as Error)?.message ?? error}`);
  }
  // As read from the certificate's DER; encoded again only for a certificate made in memory.
  const issuer = cert.issuer.valueBeforeDecode.byteLength
    ? new Uint8Array(cert.issuer.valueBeforeDecode)
    : ber(cert.issuer.toSchema());
  const serial = cert.serialNumber.valueBeforeDecodeView.byteLength
    ? cert.serialNumber.valueBeforeDecodeView
    : ber(cert.serialNumber);
  const contentKey = randomBytes(32);
  const iv = randomBytes(16);
  const cipher = createCipheriv('aes-256-cbc', contentKey, iv);
  const encryptedContent = Buffer.concat([cipher.update(rnd), cipher.final()]);
  const encryptedKey = publicEncrypt(
    { key: publicKey, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha256' },
    contentKey,
  );
  contentKey.fill(0);
  // KeyTransRecipientInfo: version 0, issuerAndSerialNumber, keyEncryptionAlgorithm, encryptedKey.
  const recipient = tlv(
    SEQUENCE,
    FIXED.version0,
    tlv(SEQUENCE, issuer, serial),
    FIXED.oaepAlgorithm,
    tlv(OCTET_STRING, encryptedKey),
  );
  const encryptedContentInfo = tlv(
    SEQUENCE,
    FIXED.data,
    tlv(SEQUENCE, FIXED.aes256Cbc, tlv(OCTET_STRING, iv)),
    tlv(CONTEXT_0_PRIMITIVE, encryptedContent),
  );
  const enveloped = tlv(SEQUENCE, FIXED.version0, tlv(SET, recipient), encryptedContentInfo);
  return tlv(SEQUENCE, FIXED.envelopedData, tlv(CONTEXT_0_CONSTRUCTED, enveloped));
}
