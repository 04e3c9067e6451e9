// pkijs's CMS EnvelopedData against the reference client, `openssl cms`, both ways and for RSA and
// EC keys: what the auth-service encrypts (envelopeFor) OpenSSL opens, and what OpenSSL encrypts
// the client library (decryptEncryptedKey, the same pkijs) opens.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decryptEncryptedKey } from '../../../libs/client/src/EncryptedKey';
import { openssl, TestPki, type KeyKind } from '../../../test-e2e/support/pki';
import { parseDer } from '../src/certificates/CertificateText';
import { envelopeFor, UnsupportedKey } from '../src/challenges/EnvelopedRnd';

const KINDS: KeyKind[] = ['rsa', 'ec-p256', 'ec-p384'];

/** How `openssl cms -encrypt` is told to use what pkijs can open (Node's WebCrypto has no RSAES-PKCS1-v1_5). */
const KEY_OPTIONS: Record<KeyKind, string[]> = {
  rsa: ['-keyopt', 'rsa_padding_mode:oaep', '-keyopt', 'rsa_oaep_md:sha256'],
  'ec-p256': ['-keyopt', 'ecdh_kdf_md:sha256'],
  'ec-p384': ['-keyopt', 'ecdh_kdf_md:sha256'],
};

describe.each(KINDS)('CMS EnvelopedData with openssl cms, %s key', (kind) => {
  const pki = new TestPki();
  const ca = pki.root(`ca-${kind}`);
  const user = pki.issue(`user-${kind}`, ca, { kind });
  const dir = mkdtempSync(join(tmpdir(), 'cp-cms-'));

  it('pkijs encrypts, openssl cms -decrypt opens it', async () => {
    const rnd = randomBytes(48);
    const der = await envelopeFor(parseDer(user.der).cert, rnd);
    const plain = openssl(
      ['cms', '-decrypt', '-inform', 'DER', '-recip', user.certPath, '-inkey', user.keyPath, '-binary'],
      der,
    );
    expect(plain.equals(rnd)).toBe(true);
  });

  it('openssl cms -encrypt encrypts, pkijs opens it', async () => {
    const rnd = randomBytes(48);
    const input = join(dir, 'rnd.bin');
    writeFileSync(input, rnd);
    const der = openssl([
      'cms',
      '-encrypt',
      '-binary',
      '-aes-256-cbc',
      '-in',
      input,
      '-outform',
      'DER',
      '-recip',
      user.certPath,
      ...KEY_OPTIONS[kind],
    ]);
    const plain = await decryptEncryptedKey(der.toString('base64'), user.pem, readFileSync(user.keyPath));
    expect(plain.equals(rnd)).toBe(true);
  });
});

describe('a certificate whose public key cannot be used', () => {
  it('is an UnsupportedKey (answered 406 CertNotValid), not an unexpected error', async () => {
    const pki = new TestPki();
    const user = pki.issue('user-bad-point', pki.root('ca-bad-point'), { kind: 'ec-p256' });
    // The P-256 point (BIT STRING of 66 bytes: 00 04 X Y) with one byte of X changed: off the curve.
    const der = Buffer.from(user.der);
    const at = der.indexOf(Buffer.from([0x03, 0x42, 0x00, 0x04]));
    expect(at).toBeGreaterThan(0);
    der[at + 10] ^= 0x01;
    await expect(envelopeFor(parseDer(der).cert, randomBytes(48))).rejects.toBeInstanceOf(UnsupportedKey);
  });
});
