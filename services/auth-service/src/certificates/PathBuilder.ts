import type { ParsedCertificate } from './CertificateText';
import { certificateProblem, issuerProblem, leafKeyUsageProblem, signatureProblem } from './CertificatePolicy';
import { opensslView } from './CertificateFacts';

/** Where path building may look for issuers. */
export interface PathSources {
  /** Certificates the client sent after its leaf (untrusted: they only help find a path). */
  given: ParsedCertificate[];
  /** Intermediates the operator registered or that validated before. */
  intermediates: ParsedCertificate[];
  /** Registered self-signed roots: a path ends at one of these. */
  roots: ParsedCertificate[];
  /** Thumbprints the operator removed from the trust list: never part of a path, whoever sends them. */
  removed: ReadonlySet<string>;
}

export interface PathLimits {
  /** Most issuers above the leaf, root included. */
  maxDepth: number;
  /** Most signature verifications for one path search. */
  maxSignatureChecks: number;
  /** Most candidate issuers looked at for one path search (bounds the search without crypto too). */
  maxSteps: number;
  /**
   * Wall-clock budget for one path search. Loops and long chains end on names alone (no
   * cryptography); this bounds the crowded cases where many candidates need their signature checked.
   */
  budgetMs: number;
}

export const DEFAULT_PATH_LIMITS: PathLimits = { maxDepth: 8, maxSignatureChecks: 16, maxSteps: 500, budgetMs: 150 };

export type PathVerdict =
  | { valid: true; /** leaf first, the trusted root last */ path: ParsedCertificate[] }
  | { valid: false; reason: string };

/** What a client or operator can do when an issuer cannot be found. */
export const MISSING_ISSUER_ADVICE =
  'send the whole chain as PEM (the certificate first, then its intermediates), or ask the operator to register the intermediate (admin trust add --cert)';

/**
 * Finds a path from the leaf up to a registered root, depth first, without pkijs's path building
 * (which follows cross-signed CA loops forever). Candidate issuers are certificates whose subject
 * is the child's issuer (and whose key identifier matches, when both carry one); each certificate
 * is used at most once per path, the depth, the signature checks and the time are capped. Every
 * certificate must be valid at `now` and meet the policy; the root's self-signature is not checked.
 */
export async function buildPath(
  leaf: ParsedCertificate,
  sources: PathSources,
  now: Date,
  limits: PathLimits = DEFAULT_PATH_LIMITS,
): Promise<PathVerdict> {
  const leafProblem =
    certificateProblem(leaf.facts, now, 'the certificate') ??
    signatureProblem(leaf.facts, 'the certificate') ??
    leafKeyUsageProblem(leaf.facts);
  if (leafProblem) return { valid: false, reason: leafProblem };
  if (sources.roots.length === 0) return { valid: false, reason: 'no trusted root is configured' };

  const rootIds = new Set(sources.roots.map((r) => r.thumbprint));
  const bySubject = new Map<string, ParsedCertificate[]>();
  const seen = new Set<string>();
  // Roots first, then what the operator registered, then what the client sent.
  for (const c of [...sources.roots, ...sources.intermediates, ...sources.given]) {
    if (seen.has(c.thumbprint)) continue;
    seen.add(c.thumbprint);
    const list = bySubject.get(c.facts.subjectKey) ?? [];
    list.push(c);
    bySubject.set(c.facts.subjectKey, list);
  }

  const started = Date.now();
  let signatureChecks = 0;
  let steps = 0;
  const GAVE_UP = Number.MAX_SAFE_INTEGER;
  let best: { depth: number; reason: string } | undefined;
  const fail = (depth: number, reason: string): void => {
    if (!best || depth >= best.depth) best = { depth, reason };
  };
  const verified = new Map<string, boolean>();

  /** Verifies every signature of a complete path, leaf first; false at the first that fails. */
  const signaturesHold = async (path: ParsedCertificate[]): Promise<boolean> => {
    for (let i = 0; i + 1 < path.length; i++) {
      const child = path[i]!;
      const issuer = path[i + 1]!;
      const pair = `${child.thumbprint}>${issuer.thumbprint}`;
      let ok = verified.get(pair);
      if (ok === undefined) {
        if (signatureChecks >= limits.maxSignatureChecks || Date.now() - started > limits.budgetMs) {
          fail(GAVE_UP, 'no path to a trusted root was found within the limits of path building');
          return false;
        }
        signatureChecks++;
        ok = signedBy(child, issuer);
        verified.set(pair, ok);
      }
      if (!ok) {
        fail(
          i + 1,
          `the signature on "${child.facts.subject}" does not verify with the key of "${issuer.facts.subject}"`,
        );
        return false;
      }
    }
    return true;
  };

  // Names, key identifiers and policy first; signatures only once a path reaches a root, so
  // loops and long chains cost no cryptography. `path` holds leaf..child; `visited` its thumbprints.
  const extend = async (path: ParsedCertificate[], visited: Set<string>): Promise<ParsedCertificate[] | undefined> => {
    const child = path[path.length - 1]!;
    const depth = path.length; // issuers above the leaf once a candidate is added
    const candidates = (bySubject.get(child.facts.issuerKey) ?? []).filter(
      (c) => !(child.facts.aki && c.facts.ski && child.facts.aki !== c.facts.ski),
    );
    if (candidates.length === 0) {
      fail(
        depth,
        `the issuer "${child.facts.issuer}" of "${child.facts.subject}" is not known: ${MISSING_ISSUER_ADVICE}`,
      );
      return undefined;
    }
    if (depth > limits.maxDepth) {
      fail(depth, `the chain is longer than ${limits.maxDepth} certificates above the leaf`);
      return undefined;
    }
    for (const issuer of candidates) {
      if (++steps > limits.maxSteps || Date.now() - started > limits.budgetMs) {
        fail(GAVE_UP, 'no path to a trusted root was found within the limits of path building');
        return undefined;
      }
      if (visited.has(issuer.thumbprint)) {
        fail(depth, `the chain loops back to "${issuer.facts.subject}" without reaching a trusted root`);
        continue;
      }
      if (sources.removed.has(issuer.thumbprint)) {
        fail(depth, `the issuer "${issuer.facts.subject}" was removed from the trusted certificates`);
        continue;
      }
      if (verified.get(`${child.thumbprint}>${issuer.thumbprint}`) === false) continue;
      const isRoot = rootIds.has(issuer.thumbprint);
      const casBelow = path.slice(1).filter((c) => c.facts.subjectKey !== c.facts.issuerKey).length;
      const problem =
        certificateProblem(issuer.facts, now, isRoot ? 'the root' : 'the intermediate') ??
        issuerProblem(issuer.facts, casBelow) ??
        (child === path[0] ? undefined : signatureProblem(child.facts, 'the intermediate'));
      if (problem) {
        fail(depth, problem);
        continue;
      }
      const longer = [...path, issuer];
      if (isRoot) {
        if (await signaturesHold(longer)) return longer;
      } else {
        visited.add(issuer.thumbprint);
        const found = await extend(longer, visited);
        visited.delete(issuer.thumbprint);
        if (found) return found;
      }
      if (best?.depth === GAVE_UP) return undefined;
    }
    return undefined;
  };

  const path = await extend([leaf], new Set([leaf.thumbprint]));
  if (path) return { valid: true, path };
  return { valid: false, reason: best?.reason ?? 'no path to a trusted root' };
}

/**
 * Whether `issuer`'s key made the signature on `child` (OpenSSL's X509_verify, which also refuses
 * a certificate whose two signature algorithm fields differ): a twentieth of the CPU pkijs spent.
 */
function signedBy(child: ParsedCertificate, issuer: ParsedCertificate): boolean {
  // OpenSSL cannot read one of them: nothing it signed, and no signature on it, holds.
  const c = opensslView(child.der);
  const i = opensslView(issuer.der);
  if (!c || !i) return false;
  try {
    return c.x509.verify(i.key);
  } catch {
    return false;
  }
}
