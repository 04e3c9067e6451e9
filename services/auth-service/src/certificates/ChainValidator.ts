import { CertificateChainValidationEngine, type Certificate } from 'pkijs';
import type { ParsedCertificate } from './CertificateText';
import { usePkijsEngine } from './pkijsEngine';

export type ChainVerdict = { valid: true } | { valid: false; reason: string };

/**
 * Builds the path from the leaf to a trusted root and checks it with pkijs: every signature,
 * every validity period at `at`, name chaining, CA flags of the issuers.
 */
export async function validateChain(
  leaf: ParsedCertificate,
  given: ParsedCertificate[],
  anchors: { roots: Certificate[]; intermediates: Certificate[] },
  at: Date,
): Promise<ChainVerdict> {
  usePkijsEngine();
  if (at < leaf.cert.notBefore.value) return { valid: false, reason: 'the certificate is not valid yet' };
  if (at > leaf.cert.notAfter.value) return { valid: false, reason: 'the certificate has expired' };
  if (anchors.roots.length === 0) return { valid: false, reason: 'no trusted root is configured' };
  const engine = new CertificateChainValidationEngine({
    trustedCerts: anchors.roots,
    // pkijs takes the last of `certs` as the leaf.
    certs: [...anchors.intermediates, ...given.map((g) => g.cert), leaf.cert],
    checkDate: at,
  });
  try {
    const result = await engine.verify();
    return result.result ? { valid: true } : { valid: false, reason: result.resultMessage || 'the chain does not verify' };
  } catch (error) {
    const message = (error as { resultMessage?: string; message?: string })?.resultMessage ?? (error as Error)?.message;
    return { valid: false, reason: message || 'no path to a trusted root' };
  }
}
