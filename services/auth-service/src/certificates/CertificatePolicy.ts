import type { CertificateFacts } from './CertificateFacts';

/** The smallest RSA modulus accepted anywhere in a chain. */
export const MIN_RSA_BITS = 2048;

/**
 * What every certificate of a chain must satisfy at `now` (validity period, key size, signature
 * hash, readable extensions). Returns the problem in words, or undefined.
 */
export function certificateProblem(f: CertificateFacts, now: Date, role: string): string | undefined {
  if (f.malformed) return `${role} "${f.subject}": ${f.malformed}`;
  if (Number.isNaN(f.notBefore.getTime()) || Number.isNaN(f.notAfter.getTime()))
    return `${role} "${f.subject}" has an unreadable validity period`;
  if (now < f.notBefore) return `${role} "${f.subject}" is not valid yet (from ${f.notBefore.toISOString()})`;
  if (now > f.notAfter) return `${role} "${f.subject}" has expired (${f.notAfter.toISOString()})`;
  if (f.keyKind === 'rsa' && (f.rsaBits === undefined || f.rsaBits < MIN_RSA_BITS)) {
    return `${role} "${f.subject}" has a ${f.rsaBits ?? 'unreadable'}-bit RSA key; at least ${MIN_RSA_BITS} bits are required`;
  }
  return undefined;
}

/** The signature on a certificate (made by its issuer) must not use a broken hash. */
export function signatureProblem(f: CertificateFacts, role: string): string | undefined {
  return f.weakSignature
    ? `${role} "${f.subject}" is signed with ${f.weakSignature}, which is no longer accepted; use SHA-256 or stronger`
    : undefined;
}

/**
 * The leaf's key must be usable for the challenge: RSA key transport needs keyEncipherment, EC
 * key agreement needs keyAgreement (when the certificate has a keyUsage extension at all).
 */
export function leafKeyUsageProblem(f: CertificateFacts): string | undefined {
  if (!f.keyUsage) return undefined;
  if (f.keyKind === 'rsa' && !f.keyUsage.keyEncipherment)
    return `the certificate "${f.subject}" has an RSA key whose keyUsage does not allow keyEncipherment, which sign-in needs`;
  if (f.keyKind === 'ec' && !f.keyUsage.keyAgreement)
    return `the certificate "${f.subject}" has an EC key whose keyUsage does not allow keyAgreement, which sign-in needs`;
  return undefined;
}

/**
 * An issuer must be a CA allowed to sign certificates, with room for the CA certificates below it
 * (`casBelow`: intermediates between it and the leaf, self-issued ones not counted).
 */
export function issuerProblem(f: CertificateFacts, casBelow: number): string | undefined {
  if (!f.isCa) return `the issuer "${f.subject}" is not a CA (basicConstraints cA is not true)`;
  if (f.keyUsage && !f.keyUsage.keyCertSign)
    return `the issuer "${f.subject}" may not sign certificates (keyUsage lacks keyCertSign)`;
  if (f.pathLen !== undefined && casBelow > f.pathLen) {
    return `the issuer "${f.subject}" allows ${f.pathLen} intermediate CA certificate(s) below it (pathLenConstraint) but the chain has ${casBelow}`;
  }
  return undefined;
}
