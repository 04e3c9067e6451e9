import { X509Certificate } from 'node:crypto';
import * as asn1js from 'asn1js';
import * as pkijs from 'pkijs';
import type { ContentReceipt } from './api';
import { certificateDer } from './EncryptedKey';
import type { ApiCalls } from './ApiCalls';
import { ReceiptError } from './errors';

const ID_DATA = '1.2.840.113549.1.7.1';
const CONTENT_TYPE = '1.2.840.113549.1.9.3';
const SIGNING_TIME = '1.2.840.113549.1.9.5';

/** Who signed a receipt, and what its signature was checked against. */
export interface ReceiptSigner {
  /** The signer certificate's subject (`CN=...`, one attribute a line joined by ', '). */
  subject: string;
  /** SHA-256 of its DER, hex with colons (as `openssl x509 -fingerprint -sha256` prints it). */
  fingerprint256: string;
  /**
   * `given`: against the certificate the caller gave (the platform's): the platform signed it.
   * `embedded`: only against the certificate the receipt carries, which anyone could have made:
   * the receipt is whole, but not proven to be the platform's.
   */
  checkedAgainst: 'given' | 'embedded';
  /** The signing-time attribute. */
  signingTime: Date;
}

export interface VerifiedReceipt {
  /** The receipt as the service sent it (DER CMS SignedData). */
  der: Buffer;
  document: ContentReceipt;
  signer: ReceiptSigner;
}

/**
 * Checks a receipt (a DER CMS SignedData with its JSON document attached) and reads its document.
 * With `certificate` (PEM or DER: the platform's receipt certificate) the signer must be that
 * certificate; without, the signature is checked against the certificate the receipt carries.
 * The signer certificate must have been valid at the receipt's signing time (so a receipt stays
 * good after its certificate expires or is replaced). Anything else is a ReceiptError.
 */
export async function verifyReceipt(der: Buffer, certificate?: string | Buffer): Promise<VerifiedReceipt> {
  let signed: pkijs.SignedData;
  try {
    const info = pkijs.ContentInfo.fromBER(new Uint8Array(der));
    if (info.contentType !== pkijs.ContentInfo.SIGNED_DATA) throw new Error(`content type ${info.contentType}`);
    signed = new pkijs.SignedData({ schema: info.content });
  } catch (error) {
    throw new ReceiptError(`the receipt is not a CMS SignedData (${(error as Error).message})`, { cause: error });
  }
  const signerInfo = signed.signerInfos[0];
  const content = signed.encapContentInfo.eContent;
  if (signed.signerInfos.length !== 1 || !signerInfo)
    throw new ReceiptError(`the receipt has ${signed.signerInfos.length} signers, not one`);
  if (signed.encapContentInfo.eContentType !== ID_DATA || !content)
    throw new ReceiptError('the receipt carries no attached data (id-data)');
  const attribute = (type: string) => signerInfo.signedAttrs?.attributes.find((a) => a.type === type)?.values[0];
  const contentType = attribute(CONTENT_TYPE);
  if (!(contentType instanceof asn1js.ObjectIdentifier) || contentType.valueBlock.toString() !== ID_DATA)
    throw new ReceiptError('the receipt does not sign its content type (id-data)');
  const time = attribute(SIGNING_TIME);
  if (!(time instanceof asn1js.UTCTime || time instanceof asn1js.GeneralizedTime))
    throw new ReceiptError('the receipt has no signing time');
  const signingTime = time.toDate();

  if (certificate !== undefined) {
    // Only the certificate given may be the signer: the ones the receipt carries are set aside.
    const given = certificateDer(certificate);
    signed.certificates = [pkijs.Certificate.fromBER(new Uint8Array(given))];
  }
  let signerCertificate: pkijs.Certificate;
  try {
    const result = await signed.verify({ signer: 0, checkChain: false, extendedMode: true });
    if (!result.signatureVerified || !result.signerCertificate) throw new Error('the signature does not match');
    signerCertificate = result.signerCertificate;
  } catch (error) {
    const message = (error as { message?: string }).message ?? String(error);
    throw new ReceiptError(
      certificate !== undefined && /find signer certificate/i.test(message)
        ? 'the receipt was not signed by the certificate given'
        : `the receipt's signature does not verify (${message})`,
      { cause: error },
    );
  }
  const x509 = new X509Certificate(Buffer.from(signerCertificate.toSchema().toBER(false)));
  if (signingTime < new Date(x509.validFrom) || signingTime > new Date(x509.validTo))
    throw new ReceiptError(
      `the receipt was signed at ${signingTime.toISOString()}, outside its certificate's validity (${x509.validFrom} to ${x509.validTo})`,
    );
  let document: ContentReceipt;
  try {
    document = JSON.parse(Buffer.from((content as asn1js.OctetString).getValue()).toString('utf8')) as ContentReceipt;
  } catch (error) {
    throw new ReceiptError('the receipt is signed but its content is not JSON', { cause: error });
  }
  return {
    der,
    document,
    signer: {
      subject: x509.subject.replace(/\n/g, ', '),
      fingerprint256: x509.fingerprint256,
      checkedAgainst: certificate !== undefined ? 'given' : 'embedded',
      signingTime,
    },
  };
}

/** GET …/receipt, verified (see verifyReceipt), and checked to name this content and owner. */
export async function fetchReceipt(
  api: ApiCalls,
  owner: string,
  id: string,
  opts: { certificate?: string | Buffer; signal?: AbortSignal },
): Promise<VerifiedReceipt> {
  const res = await api.call({
    method: 'GET',
    url: api.url(`/v1/${owner}/contents/${id}/receipt`),
    headers: {},
    signal: opts.signal,
  });
  const verified = await verifyReceipt(res.bytes, opts.certificate);
  const { document } = verified;
  if (document['content-id'] !== id.toLowerCase() || document['owner-id'] !== owner.toLowerCase())
    throw new ReceiptError(
      `the receipt is for content ${document['content-id']} of owner ${document['owner-id']}, not ${id} of ${owner}`,
    );
  return verified;
}
