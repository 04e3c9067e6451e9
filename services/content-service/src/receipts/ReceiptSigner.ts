import { createHash, webcrypto, type KeyObject } from 'node:crypto';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';

const ID_DATA = '1.2.840.113549.1.7.1';
const CONTENT_TYPE = '1.2.840.113549.1.9.3';
const MESSAGE_DIGEST = '1.2.840.113549.1.9.4';
const SIGNING_TIME = '1.2.840.113549.1.9.5';

/** The WebCrypto algorithm that signs with `key` (RSA PKCS#1 v1.5 or ECDSA P-256, SHA-256), or null for any other key. */
export function signingAlgorithm(key: KeyObject): webcrypto.RsaHashedImportParams | webcrypto.EcKeyImportParams | null {
  if (key.asymmetricKeyType === 'rsa') return { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' };
  if (key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1')
    return { name: 'ECDSA', namedCurve: 'P-256' };
  return null;
}

/**
 * Signs receipts as DER CMS SignedData (RFC 5652) that `openssl cms -verify -inform DER` accepts:
 * the document attached as id-data, SHA-256, the signer named by issuer and serial number, its
 * certificate (and any intermediates given after it) included, and the signed attributes
 * content-type, message-digest and signing-time. The key is imported once; each receipt costs
 * one signature.
 */
export class ReceiptSigner {
  private constructor(
    private readonly key: webcrypto.CryptoKey,
    private readonly certificates: pkijs.Certificate[],
  ) {}

  /**
   * `key` must be the private key of the first certificate (DER), RSA or EC P-256 (see
   * `signingAlgorithm`); the caller has checked that (loadReceiptSigner does at start-up).
   */
  static async create(key: KeyObject, certificates: Buffer[]): Promise<ReceiptSigner> {
    const algorithm = signingAlgorithm(key);
    if (!algorithm || certificates.length === 0) throw new TypeError('an RSA or EC P-256 key and its certificate');
    const imported = await webcrypto.subtle.importKey(
      'pkcs8',
      key.export({ type: 'pkcs8', format: 'der' }),
      algorithm,
      false,
      ['sign'],
    );
    return new ReceiptSigner(
      imported,
      certificates.map((der) => pkijs.Certificate.fromBER(new Uint8Array(der))),
    );
  }

  /** `content` signed at `signingTime`: a DER ContentInfo of a SignedData that carries it. */
  async sign(content: Uint8Array, signingTime: Date): Promise<Buffer> {
    const signer = this.certificates[0]!;
    const digest = createHash('sha256').update(content).digest();
    const attributes = [
      new pkijs.Attribute({ type: CONTENT_TYPE, values: [new asn1js.ObjectIdentifier({ value: ID_DATA })] }),
      new pkijs.Attribute({ type: MESSAGE_DIGEST, values: [new asn1js.OctetString({ valueHex: bytes(digest) })] }),
      new pkijs.Attribute({
        type: SIGNING_TIME,
        // RFC 5652 11.3: UTCTime up to 2049, GeneralizedTime from 2050.
        values: [
          signingTime.getUTCFullYear() < 2050
            ? new asn1js.UTCTime({ valueDate: signingTime })
            : new asn1js.GeneralizedTime({ valueDate: signingTime }),
        ],
      }),
    ];
    // DER orders a SET OF by its members' encodings, and OpenSSL checks the signature over the
    // attributes in that order: they are signed in it.
    const encoded = (a: pkijs.Attribute) => Buffer.from(a.toSchema().toBER(false));
    attributes.sort((a, b) => Buffer.compare(encoded(a), encoded(b)));
    const encapsulated = new pkijs.EncapsulatedContentInfo({ eContentType: ID_DATA });
    // Set here rather than in the constructor, which would cut it into a constructed (BER) string.
    encapsulated.eContent = new asn1js.OctetString({ valueHex: bytes(content) });
    const signed = new pkijs.SignedData({
      version: 1,
      encapContentInfo: encapsulated,
      certificates: this.certificates,
      signerInfos: [
        new pkijs.SignerInfo({
          version: 1,
          sid: new pkijs.IssuerAndSerialNumber({ issuer: signer.issuer, serialNumber: signer.serialNumber }),
          signedAttrs: new pkijs.SignedAndUnsignedAttributes({ type: 0, attributes }),
        }),
      ],
    });
    await signed.sign(this.key, 0, 'SHA-256');
    const info = new pkijs.ContentInfo({ contentType: pkijs.ContentInfo.SIGNED_DATA, content: signed.toSchema(true) });
    return Buffer.from(info.toSchema().toBER(false));
  }
}

function bytes(b: Uint8Array): ArrayBuffer {
  return b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer;
}
