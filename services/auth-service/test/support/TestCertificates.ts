// Certificates made in process with pkijs and WebCrypto: fast enough for chains of a thousand,
// cross-signed CA loops, and certificates openssl will not easily make (weak keys, SHA-1, odd
// extensions). Their private keys stay in memory; certificates that must decrypt a challenge
// come from test-e2e/support/pki.ts (openssl) instead.
import { createHash, webcrypto } from 'node:crypto';
import * as asn1js from 'asn1js';
import {
  AttributeTypeAndValue,
  AuthorityKeyIdentifier,
  BasicConstraints,
  Certificate,
  Extension,
  RelativeDistinguishedNames,
} from 'pkijs';

const subtle = webcrypto.subtle;
type CryptoKey = webcrypto.CryptoKey;
const DAY = 24 * 3600 * 1000;

export type KeySpec = { kind: 'ec' } | { kind: 'rsa'; bits: number };

export interface TestKey {
  spec: KeySpec;
  privateKey: CryptoKey;
  publicKey: CryptoKey;
  /** SHA-1 of the public key bits, as openssl's subjectKeyIdentifier=hash. */
  ski: Buffer;
}

export interface MadeCert {
  name: string;
  key: TestKey;
  cert: Certificate;
  der: Buffer;
  pem: string;
  thumbprint: string;
}

export interface CertOptions {
  /** The key of the certified subject; a new P-256 key when absent. */
  key?: TestKey;
  ca?: boolean;
  pathLen?: number;
  /** keyUsage bits by name; no extension when absent. */
  keyUsage?: ('digitalSignature' | 'keyEncipherment' | 'keyAgreement' | 'keyCertSign' | 'cRLSign')[];
  notBefore?: Date;
  notAfter?: Date;
  hash?: 'SHA-1' | 'SHA-256';
  /** Leave out the subject and authority key identifiers. */
  noKeyIds?: boolean;
  /** Use this issuer name instead of the issuer's subject (for self-issued or mismatched names). */
  issuerName?: string;
}

const BITS: Record<string, number> = {
  digitalSignature: 0x80,
  keyEncipherment: 0x20,
  keyAgreement: 0x08,
  keyCertSign: 0x04,
  cRLSign: 0x02,
};

export async function newKey(spec: KeySpec = { kind: 'ec' }, hash: 'SHA-1' | 'SHA-256' = 'SHA-256'): Promise<TestKey> {
  const params =
    spec.kind === 'ec'
      ? { name: 'ECDSA', namedCurve: 'P-256' }
      : { name: 'RSASSA-PKCS1-v1_5', modulusLength: spec.bits, publicExponent: new Uint8Array([1, 0, 1]), hash };
  const pair = (await subtle.generateKey(params, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  const spki = Buffer.from(await subtle.exportKey('spki', pair.publicKey));
  const asn1 = asn1js.fromBER(new Uint8Array(spki).buffer);
  const bitString = (asn1.result as asn1js.Sequence).valueBlock.value[1] as asn1js.BitString;
  const ski = createHash('sha1').update(bitString.valueBlock.valueHexView).digest();
  return { spec, privateKey: pair.privateKey, publicKey: pair.publicKey, ski };
}

function nameOf(cn: string): RelativeDistinguishedNames {
  return new RelativeDistinguishedNames({
    typesAndValues: [
      new AttributeTypeAndValue({ type: '2.5.4.3', value: new asn1js.Utf8String({ value: cn }) }),
      new AttributeTypeAndValue({
        type: '2.5.4.10',
        value: new asn1js.Utf8String({ value: 'Content Platform Tests' }),
      }),
    ],
  });
}

let serial = Date.now();

/**
 * A certificate for `name` signed by `issuer` (self-signed when issuer is 'self'). The issuer's
 * key signs; with `hash: 'SHA-1'` and an RSA issuer its key must have been made for SHA-1.
 */
export async function makeCert(name: string, issuer: MadeCert | 'self', opts: CertOptions = {}): Promise<MadeCert> {
  const key = opts.key ?? (await newKey());
  const signer = issuer === 'self' ? key : issuer.key;
  const cert = new Certificate();
  cert.version = 2;
  cert.serialNumber = new asn1js.Integer({ value: serial++ });
  cert.subject = nameOf(name);
  cert.issuer = nameOf(opts.issuerName ?? (issuer === 'self' ? name : issuer.name));
  cert.notBefore.value = opts.notBefore ?? new Date(Date.now() - DAY);
  cert.notAfter.value = opts.notAfter ?? new Date(Date.now() + 365 * DAY);
  await cert.subjectPublicKeyInfo.importKey(key.publicKey);
  const extensions: Extension[] = [];
  if (opts.ca !== undefined) {
    const bc = new BasicConstraints({
      cA: opts.ca,
      ...(opts.pathLen !== undefined ? { pathLenConstraint: opts.pathLen } : {}),
    });
    extensions.push(
      new Extension({ extnID: '2.5.29.19', critical: true, extnValue: bc.toSchema().toBER(false), parsedValue: bc }),
    );
  }
  const usage = opts.keyUsage ?? (opts.ca ? ['keyCertSign', 'cRLSign'] : undefined);
  if (usage) {
    const byte = usage.reduce((b, u) => b | BITS[u]!, 0);
    const bits = new asn1js.BitString({ valueHex: new Uint8Array([byte]).buffer, unusedBits: 0 });
    extensions.push(
      new Extension({ extnID: '2.5.29.15', critical: true, extnValue: bits.toBER(false), parsedValue: bits }),
    );
  }
  if (!opts.noKeyIds) {
    const ski = new asn1js.OctetString({ valueHex: new Uint8Array(key.ski).buffer });
    extensions.push(new Extension({ extnID: '2.5.29.14', extnValue: ski.toBER(false), parsedValue: ski }));
    const aki = new AuthorityKeyIdentifier({
      keyIdentifier: new asn1js.OctetString({ valueHex: new Uint8Array(signer.ski).buffer }),
    });
    extensions.push(new Extension({ extnID: '2.5.29.35', extnValue: aki.toSchema().toBER(false), parsedValue: aki }));
  }
  if (extensions.length) cert.extensions = extensions;
  await cert.sign(signer.privateKey, opts.hash ?? 'SHA-256');
  const der = Buffer.from(cert.toSchema(true).toBER(false));
  const parsed = new Certificate({ schema: asn1js.fromBER(new Uint8Array(der).buffer).result });
  return {
    name,
    key,
    cert: parsed,
    der,
    pem: pemOf(der),
    thumbprint: createHash('sha1').update(der).digest('hex').toUpperCase(),
  };
}

export function pemOf(der: Buffer): string {
  return `-----BEGIN CERTIFICATE-----\n${der
    .toString('base64')
    .replace(/(.{64})/g, '$1\n')
    .replace(/\n$/, '')}\n-----END CERTIFICATE-----\n`;
}

/** A root CA (self-signed, cA true, keyCertSign). */
export const makeRoot = (name: string, opts: CertOptions = {}): Promise<MadeCert> =>
  makeCert(name, 'self', { ca: true, ...opts });

/** A user certificate as sign-in expects it (keyAgreement for EC, keyEncipherment for RSA). */
export const makeLeaf = (name: string, issuer: MadeCert, opts: CertOptions = {}): Promise<MadeCert> =>
  makeCert(name, issuer, { ca: false, keyUsage: ['digitalSignature', 'keyEncipherment', 'keyAgreement'], ...opts });

/**
 * The cross-signed loop that made pkijs spin: CA A and CA B each certified by the other (same
 * names and keys as their self-signed selves), and a leaf issued by A.
 */
export async function crossSignedLoop(
  prefix = 'Loop',
): Promise<{ leaf: MadeCert; aByB: MadeCert; bByA: MadeCert; a: MadeCert; b: MadeCert }> {
  const a = await makeRoot(`${prefix} CA A`);
  const b = await makeRoot(`${prefix} CA B`);
  const aByB = await makeCert(a.name, b, { ca: true, key: a.key });
  const bByA = await makeCert(b.name, a, { ca: true, key: b.key });
  const leaf = await makeLeaf(`${prefix} user`, a);
  return { leaf, aByB, bByA, a, b };
}

/** A chain of `length` CAs, each issued by the next, under `top`; returns leaf-side first. One key signs all (fast). */
export async function longChain(length: number, top: MadeCert, prefix = 'Link'): Promise<MadeCert[]> {
  const key = await newKey();
  const chain: MadeCert[] = [];
  let issuer = top;
  for (let i = length - 1; i >= 0; i--) {
    issuer = await makeCert(`${prefix} ${i}`, issuer, { ca: true, key });
    chain.unshift(issuer);
  }
  return chain;
}
