// The CMS EnvelopedData of sign-in against the reference client, `openssl cms`, both ways and for
// RSA and EC keys: what the auth-service encrypts (envelopeFor: node:crypto for RSA, pkijs for EC)
// OpenSSL opens, and what OpenSSL encrypts the client library (decryptEncryptedKey: node:crypto for
// RSA key transport, pkijs for the rest) opens.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decryptEncryptedKey } from '../../../libs/client/src/EncryptedKey';
import { CredentialsFileError } from '../../../libs/client/src/errors';
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

/** `rnd` as `openssl cms -encrypt` seals it for the certificate at `certPath` (DER). */
function opensslEncrypt(dir: string, certPath: string, rnd: Buffer, cipher: string, keyopts: string[]): Buffer {
  const input = join(dir, 'rnd.bin');
  writeFileSync(input, rnd);
  return openssl([
    'cms',
    '-encrypt',
    '-binary',
    cipher,
    '-in',
    input,
    '-outform',
    'DER',
    '-recip',
    certPath,
    ...keyopts,
  ]);
}

describe.each(KINDS)('CMS EnvelopedData with openssl cms, %s key', (kind) => {
  const pki = new TestPki();
  const ca = pki.root(`ca-${kind}`);
  const user = pki.issue(`user-${kind}`, ca, { kind });
  const dir = mkdtempSync(join(tmpdir(), 'cp-cms-'));

  it('envelopeFor encrypts, openssl cms -decrypt opens it', async () => {
    const rnd = randomBytes(48);
    const der = await envelopeFor(parseDer(user.der).cert, rnd);
    const plain = openssl(
      ['cms', '-decrypt', '-inform', 'DER', '-recip', user.certPath, '-inkey', user.keyPath, '-binary'],
      der,
    );
    expect(plain.equals(rnd)).toBe(true);
  });

  it('openssl cms -encrypt encrypts, decryptEncryptedKey opens it', async () => {
    const rnd = randomBytes(48);
    const der = opensslEncrypt(dir, user.certPath, rnd, '-aes-256-cbc', KEY_OPTIONS[kind]);
    const plain = await decryptEncryptedKey(der.toString('base64'), user.pem, readFileSync(user.keyPath));
    expect(plain.equals(rnd)).toBe(true);
  });
});

describe('RSA key transport in the forms OpenSSL writes', () => {
  const pki = new TestPki();
  const user = pki.issue('user-rsa-forms', pki.root('ca-rsa-forms'), { kind: 'rsa' });
  const other = pki.issue('user-rsa-other', pki.root('ca-rsa-other'), { kind: 'rsa' });
  const dir = mkdtempSync(join(tmpdir(), 'cp-cms-'));
  const encrypt = (rnd: Buffer, cipher: string, keyopts: string[]) =>
    opensslEncrypt(dir, user.certPath, rnd, cipher, keyopts);

  it.each([
    ['RSAES-OAEP with SHA-256, AES-256-CBC', '-aes-256-cbc', KEY_OPTIONS.rsa],
    ['RSAES-OAEP with its default SHA-1, AES-128-CBC', '-aes-128-cbc', ['-keyopt', 'rsa_padding_mode:oaep']],
    [
      'RSAES-OAEP with SHA-384, AES-192-CBC',
      '-aes-192-cbc',
      ['-keyopt', 'rsa_padding_mode:oaep', '-keyopt', 'rsa_oaep_md:sha384'],
    ],
  ])('opens %s', async (_name, cipher, keyopts) => {
    const rnd = randomBytes(48);
    const der = encrypt(rnd, cipher, keyopts);
    expect((await decryptEncryptedKey(der.toString('base64'), user.pem, readFileSync(user.keyPath))).equals(rnd)).toBe(
      true,
    );
  });

  it('refuses another key, and a changed wrapped key, as a CredentialsFileError', async () => {
    const der = await envelopeFor(parseDer(user.der).cert, randomBytes(48));
    await expect(
      decryptEncryptedKey(der.toString('base64'), other.pem, readFileSync(other.keyPath)),
    ).rejects.toBeInstanceOf(CredentialsFileError);
    // The RSA-wrapped content key (OCTET STRING of 256 bytes) with one bit changed: OAEP's check fails.
    const changed = Buffer.from(der);
    const at = changed.indexOf(Buffer.from([0x04, 0x82, 0x01, 0x00]));
    expect(at).toBeGreaterThan(0);
    changed[at + 4 + 100] ^= 0x01;
    await expect(
      decryptEncryptedKey(changed.toString('base64'), user.pem, readFileSync(user.keyPath)),
    ).rejects.toBeInstanceOf(CredentialsFileError);
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
