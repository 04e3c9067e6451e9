import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { CertUnreadable, parseCertificates, TooManyCertificates } from '../src/certificates/CertificateText';

const dir = mkdtempSync(join(tmpdir(), 'cp-certtext-'));
const certs = ['a', 'b'].map((n) => {
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-days',
      '1',
      '-subj',
      `/CN=${n}`,
      '-keyout',
      join(dir, `${n}.key`),
      '-out',
      join(dir, `${n}.pem`),
    ],
    { stdio: 'ignore' },
  );
  const pem = readFileSync(join(dir, `${n}.pem`), 'utf8');
  const der = execFileSync('openssl', ['x509', '-in', join(dir, `${n}.pem`), '-outform', 'DER']);
  const thumbprint = execFileSync('openssl', ['x509', '-in', join(dir, `${n}.pem`), '-noout', '-fingerprint', '-sha1'])
    .toString()
    .split('=')[1]!
    .trim()
    .replace(/:/g, '');
  return { pem, der, thumbprint };
});

describe('reading a certificate body', () => {
  it('reads PEM, bare base64 and DER to the same certificate, with the thumbprint openssl computes', () => {
    const [a] = certs;
    for (const body of [
      Buffer.from(a!.pem),
      Buffer.from(a!.der.toString('base64')),
      a!.der,
      Buffer.from(a!.der.toString('base64').replace(/(.{64})/g, '$1\r\n')),
    ]) {
      const [leaf] = parseCertificates(body);
      expect(leaf!.thumbprint).toBe(a!.thumbprint);
      expect(leaf!.der.equals(a!.der)).toBe(true);
    }
  });

  it('keeps the order of a PEM chain: leaf first', () => {
    const parsed = parseCertificates(Buffer.from(`some text before\n${certs[0]!.pem}\n${certs[1]!.pem}`));
    expect(parsed.map((c) => c.thumbprint)).toEqual([certs[0]!.thumbprint, certs[1]!.thumbprint]);
  });

  it('refuses anything that is not a certificate with CertUnreadable, never another error', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 0, maxLength: 600 }), (bytes) => {
        try {
          parseCertificates(Buffer.from(bytes));
        } catch (error) {
          expect(error).toBeInstanceOf(CertUnreadable);
        }
      }),
      { numRuns: 500 },
    );
  });

  it('refuses a DER or base64 body larger than 64 KiB without decoding it', () => {
    // One SEQUENCE of a million NULLs: asn1js would walk every element.
    const huge = Buffer.concat([
      Buffer.from([0x30, 0x83, 0x1e, 0x84, 0x80]),
      Buffer.alloc(0x1e8480, Buffer.from([0x05, 0x00])),
    ]);
    for (const body of [huge, Buffer.from(huge.toString('base64'))]) {
      const started = performance.now();
      // The message proves nothing was decoded; the bound only catches a walk of the elements
      // (seconds), with room for a loaded 2-core machine.
      expect(() => parseCertificates(body)).toThrow(/larger than 65536 bytes/);
      expect(performance.now() - started).toBeLessThan(1_000);
    }
  });

  it('refuses more than 10 PEM blocks before decoding any', () => {
    const pem = certs[0]!.pem;
    expect(parseCertificates(Buffer.from(pem.repeat(10)))).toHaveLength(10);
    expect(() => parseCertificates(Buffer.from(pem.repeat(11)))).toThrow(TooManyCertificates);
    // Blocks that would not even decode are counted, not decoded.
    expect(() =>
      parseCertificates(Buffer.from('-----BEGIN CERTIFICATE-----\n!!\n-----END CERTIFICATE-----\n'.repeat(500))),
    ).toThrow(TooManyCertificates);
  });

  it('refuses truncated or extended DER', () => {
    const der = certs[0]!.der;
    expect(() => parseCertificates(der.subarray(0, der.length - 1))).toThrow(CertUnreadable);
    expect(() => parseCertificates(Buffer.concat([der, Buffer.from([0])]))).toThrow(CertUnreadable);
  });
});
