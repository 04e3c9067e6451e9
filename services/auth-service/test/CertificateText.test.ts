import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { CertUnreadable, parseCertificates } from '../src/certificates/CertificateText';

const dir = mkdtempSync(join(tmpdir(), 'cp-certtext-'));
const certs = ['a', 'b'].map((n) => {
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '1', '-subj', `/CN=${n}`, '-keyout', join(dir, `${n}.key`), '-out', join(dir, `${n}.pem`)], { stdio: 'ignore' });
  const pem = readFileSync(join(dir, `${n}.pem`), 'utf8');
  const der = execFileSync('openssl', ['x509', '-in', join(dir, `${n}.pem`), '-outform', 'DER']);
  const thumbprint = execFileSync('openssl', ['x509', '-in', join(dir, `${n}.pem`), '-noout', '-fingerprint', '-sha1']).toString().split('=')[1]!.trim().replace(/:/g, '');
  return { pem, der, thumbprint };
});

describe('reading a certificate body', () => {
  it('reads PEM, bare base64 and DER to the same certificate, with the thumbprint openssl computes', () => {
    const [a] = certs;
    for (const body of [Buffer.from(a!.pem), Buffer.from(a!.der.toString('base64')), a!.der, Buffer.from(a!.der.toString('base64').replace(/(.{64})/g, '$1\r\n'))]) {
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

  it('refuses truncated or extended DER', () => {
    const der = certs[0]!.der;
    expect(() => parseCertificates(der.subarray(0, der.length - 1))).toThrow(CertUnreadable);
    expect(() => parseCertificates(Buffer.concat([der, Buffer.from([0])]))).toThrow(CertUnreadable);
  });
});
