// Receipts signed by the content-service's ReceiptSigner and checked by the client's verifyReceipt,
// in process: RSA and EC P-256 keys, a flipped byte, the wrong certificate, and the start-up checks
// of the key and certificate files. (test-e2e/receipts.e2e.test.ts checks them with openssl.)
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { selfSignedCertificate } from '@cp/credentials';
import { verifyReceipt } from '../../../libs/client/src/Receipt';
import { loadConfig } from '../src/config';
import { receiptDocument } from '../src/receipts/ContentReceipts';
import { loadReceiptSigner } from '../src/receipts/loadReceiptSigner';
import type { ObjectInfo } from '../src/store/ObjectStore';

const DAY = 24 * 3600 * 1000;
const dir = mkdtempSync(join(tmpdir(), 'cp-receipts-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let n = 0;
/** A key and its certificate as PEM files; the certificate valid from `from` to `to`. */
async function signerFiles(
  key: KeyObject,
  opts: { from?: Date; to?: Date; certifiedKey?: KeyObject } = {},
): Promise<{ RECEIPT_SIGNING_KEY_FILE: string; RECEIPT_CERTIFICATE_FILE: string; pem: string }> {
  const pem = await selfSignedCertificate(opts.certifiedKey ?? key, {
    commonName: `Receipts ${++n}`,
    notBefore: opts.from ?? new Date(Date.now() - DAY),
    notAfter: opts.to ?? new Date(Date.now() + 30 * DAY),
  });
  const files = { RECEIPT_SIGNING_KEY_FILE: join(dir, `${n}.key`), RECEIPT_CERTIFICATE_FILE: join(dir, `${n}.pem`) };
  writeFileSync(files.RECEIPT_SIGNING_KEY_FILE, key.export({ type: 'pkcs8', format: 'pem' }));
  writeFileSync(files.RECEIPT_CERTIFICATE_FILE, pem);
  return { ...files, pem };
}

const ec = () => generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
const rsa = (bits = 2048) => generateKeyPairSync('rsa', { modulusLength: bits }).privateKey;

const OWNER = '2f1c4f4e-8d43-4c4f-9a51-0b7d2e1f7a10';
const CONTENT = '9b2d6f1e-3c4a-4e5b-8f6a-7d8e9f0a1b2c';
const info: ObjectInfo = {
  contentLength: 157286400,
  etag: '"abc-3"',
  contentType: 'application/pdf',
  lastModified: new Date('2026-03-01T10:20:30Z'),
  metadata: { 'created-at': '2026-03-01T10:00:00.123Z', uploader: encodeURIComponent('bearer:alice@example.com') },
  digests: { crc64nvme: Buffer.from('0011223344556677', 'hex'), 'sha-256': Buffer.alloc(32, 7) },
};

describe('receipts', () => {
  it.each([
    ['EC P-256', ec],
    ['RSA 2048', () => rsa()],
  ])('signs with an %s key a receipt the client verifies against the certificate', async (_kind, key) => {
    const files = await signerFiles(key());
    const loaded = (await loadReceiptSigner(files, new Date()))!;
    const issued = new Date(Math.floor(Date.now() / 1000) * 1000);
    const document = receiptDocument(OWNER, CONTENT, info, issued);
    const der = await loaded.signer.sign(Buffer.from(JSON.stringify(document)), issued);

    const given = await verifyReceipt(der, files.pem);
    expect(given.document).toEqual(document);
    expect(given.signer).toMatchObject({
      checkedAgainst: 'given',
      signingTime: issued,
      fingerprint256: loaded.fingerprint,
    });
    const embedded = await verifyReceipt(der);
    expect(embedded.signer.checkedAgainst).toBe('embedded');
  });

  it('writes the document from the object S3 describes, in the API’s kebab-case', () => {
    expect(receiptDocument(OWNER, CONTENT, info, new Date('2026-03-02T08:00:00Z'))).toEqual({
      'content-id': CONTENT,
      'owner-id': OWNER,
      size: 157286400,
      'content-type': 'application/pdf',
      digests: { 'sha-256': Buffer.alloc(32, 7).toString('base64'), crc64nvme: 'ABEiM0RVZnc=' },
      'created-at': '2026-03-01T10:00:00.123Z',
      'completed-at': '2026-03-01T10:20:30.000Z',
      uploader: 'bearer:alice@example.com',
      'uploader-certificate': null,
      issued: '2026-03-02T08:00:00.000Z',
    });
    const bare = receiptDocument(
      OWNER,
      CONTENT,
      { ...info, lastModified: null, metadata: {}, digests: {} },
      new Date(0),
    );
    expect(bare).toMatchObject({ digests: {}, 'created-at': null, 'completed-at': null, uploader: null });
    const session = { ...info, metadata: { uploader: 'session%3Au1', 'uploader-certificate': 'AB'.repeat(20) } };
    expect(receiptDocument(OWNER, CONTENT, session, new Date(0))).toMatchObject({
      uploader: 'session:u1',
      'uploader-certificate': 'AB'.repeat(20),
    });
  });

  it('refuses a receipt with one byte flipped in its document, its signed attributes or its signature', async () => {
    const files = await signerFiles(ec());
    const { signer } = (await loadReceiptSigner(files, new Date()))!;
    const document = Buffer.from(JSON.stringify(receiptDocument(OWNER, CONTENT, info, new Date())));
    const der = await signer.sign(document, new Date());
    const at = der.indexOf(document);
    // A byte of the document, of the signing time and message digest, and the last of the signature.
    const signedAttributes = der.indexOf(Buffer.from('06092a864886f70d010905', 'hex'));
    expect(Math.min(at, signedAttributes)).toBeGreaterThan(0);
    for (const offset of [at + 10, signedAttributes + 15, signedAttributes + 30, der.length - 1]) {
      const flipped = Buffer.from(der);
      flipped[offset]! ^= 0x01;
      await expect(verifyReceipt(flipped, files.pem)).rejects.toThrow(/receipt/);
    }
  });

  it('verifies a receipt signed before its certificate expired, as after a rotation', async () => {
    const files = await signerFiles(ec(), { from: new Date(Date.now() - 30 * DAY), to: new Date(Date.now() - DAY) });
    const signedAt = new Date(Math.floor((Date.now() - 10 * DAY) / 1000) * 1000);
    const { signer } = (await loadReceiptSigner(files, signedAt))!;
    const der = await signer.sign(Buffer.from('{"old":true}'), signedAt);
    expect(await verifyReceipt(der, files.pem)).toMatchObject({
      document: { old: true },
      signer: { signingTime: signedAt },
    });
  });

  it('refuses a receipt whose signer is not the certificate given', async () => {
    const files = await signerFiles(ec());
    const other = await signerFiles(ec());
    const { signer } = (await loadReceiptSigner(files, new Date()))!;
    const der = await signer.sign(Buffer.from('{}'), new Date());
    await expect(verifyReceipt(der, other.pem)).rejects.toThrow('the receipt was not signed by the certificate given');
    await expect(verifyReceipt(Buffer.from('not a receipt'))).rejects.toThrow(/not a CMS SignedData/);
  });

  describe('the signing key and certificate at start-up', () => {
    const load = (files: Record<string, string>) => loadReceiptSigner(files, new Date());

    it('signs nothing without them', async () => {
      expect(await load({})).toBeNull();
    });

    it('stops on a key that is not the certificate’s, naming RECEIPT_SIGNING_KEY_FILE', async () => {
      const files = await signerFiles(ec(), { certifiedKey: ec() });
      await expect(load(files)).rejects.toThrow(
        /^configuration: RECEIPT_SIGNING_KEY_FILE: is not the private key of the certificate in RECEIPT_CERTIFICATE_FILE/,
      );
    });

    it('stops on files it cannot use, naming the variable and never showing the key', async () => {
      const good = await signerFiles(ec());
      const garbage = join(dir, 'garbage.pem');
      writeFileSync(garbage, 'not a certificate, not a key');
      await expect(load({ ...good, RECEIPT_CERTIFICATE_FILE: join(dir, 'missing.pem') })).rejects.toThrow(
        /^configuration: RECEIPT_CERTIFICATE_FILE: .*missing\.pem cannot be read \(ENOENT\)/,
      );
      await expect(load({ ...good, RECEIPT_CERTIFICATE_FILE: garbage })).rejects.toThrow(
        /^configuration: RECEIPT_CERTIFICATE_FILE: holds no certificate/,
      );
      await expect(load({ ...good, RECEIPT_SIGNING_KEY_FILE: garbage })).rejects.toThrow(
        /^configuration: RECEIPT_SIGNING_KEY_FILE: .* is not an unencrypted private key/,
      );
      // The certificate where the key belongs: refused, and what the file holds not echoed.
      const refusal = await load({ ...good, RECEIPT_SIGNING_KEY_FILE: good.RECEIPT_CERTIFICATE_FILE }).catch(String);
      expect(refusal).toMatch(/^ConfigError: configuration: RECEIPT_SIGNING_KEY_FILE: /);
      expect(refusal).not.toContain('BEGIN');
      expect(refusal).not.toContain(good.pem.split('\n')[1]);
    });

    it('stops on a certificate not valid now, and on keys other than RSA ≥ 2048 bits and EC P-256', async () => {
      const expired = await signerFiles(ec(), {
        from: new Date(Date.now() - 30 * DAY),
        to: new Date(Date.now() - DAY),
      });
      await expect(load(expired)).rejects.toThrow(/^configuration: RECEIPT_CERTIFICATE_FILE: .*not now/);
      const p384 = generateKeyPairSync('ec', { namedCurve: 'P-384' }).privateKey;
      const p384Files = await signerFiles(ec());
      writeFileSync(p384Files.RECEIPT_SIGNING_KEY_FILE, p384.export({ type: 'pkcs8', format: 'pem' }));
      await expect(load(p384Files)).rejects.toThrow(/^configuration: RECEIPT_SIGNING_KEY_FILE: holds an ec key/);
      const weak = await signerFiles(ec());
      writeFileSync(weak.RECEIPT_SIGNING_KEY_FILE, rsa(1024).export({ type: 'pkcs8', format: 'pem' }));
      await expect(load(weak)).rejects.toThrow(/^configuration: RECEIPT_SIGNING_KEY_FILE: holds a 1024-bit RSA key/);
    });

    it('takes both variables or neither', () => {
      const base = { REDIS_URL: 'redis://127.0.0.1:6379', S3_BUCKET: 'contents', JWT_ISSUER: 'https://i.test' };
      const jwks = { ...base, JWT_JWKS_FILE: '/etc/jwks.json' };
      expect(() => loadConfig({ ...jwks, RECEIPT_SIGNING_KEY_FILE: '/k.pem' })).toThrow(
        /^configuration: RECEIPT_CERTIFICATE_FILE: is required with RECEIPT_SIGNING_KEY_FILE/,
      );
      expect(() => loadConfig({ ...jwks, RECEIPT_CERTIFICATE_FILE: '/c.pem' })).toThrow(
        /^configuration: RECEIPT_SIGNING_KEY_FILE: is required with RECEIPT_CERTIFICATE_FILE/,
      );
      expect(
        loadConfig({ ...jwks, RECEIPT_SIGNING_KEY_FILE: '/k.pem', RECEIPT_CERTIFICATE_FILE: '/c.pem' }),
      ).toMatchObject({ RECEIPT_SIGNING_KEY_FILE: '/k.pem', RECEIPT_CERTIFICATE_FILE: '/c.pem' });
    });
  });
});
