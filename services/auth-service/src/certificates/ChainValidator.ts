import type { TrustStore } from '../store/TrustStore';
import { dnText } from './CertificateFacts';
import type { ParsedCertificate } from './CertificateText';
import { buildPath, DEFAULT_PATH_LIMITS, type PathLimits, type PathVerdict } from './PathBuilder';

export type ChainVerdict =
  { valid: true; path: ParsedCertificate[]; remembered: number } | { valid: false; reason: string };

/**
 * Validates a leaf with the intermediates a client (or the operator) sent against the trust
 * store, and remembers the intermediates of a chain that validated.
 */
export class ChainValidator {
  constructor(
    private readonly trust: TrustStore,
    private readonly opts: { limits?: PathLimits } = {},
  ) {}

  async validate(leaf: ParsedCertificate, given: ParsedCertificate[], now: Date): Promise<ChainVerdict> {
    const limits = this.opts.limits ?? DEFAULT_PATH_LIMITS;
    let anchors = await this.trust.anchors();
    let verdict = await buildPath(leaf, { given, ...anchors }, now, limits);
    // The list is cached; a root or intermediate the operator just added must count at once, but a
    // stream of bad chains must not turn into a stream of full reads: re-read only on a change.
    if (!verdict.valid && (await this.trust.changedSinceRead())) {
      anchors = await this.fresh();
      verdict = await buildPath(leaf, { given, ...anchors }, now, limits);
    }
    if (!verdict.valid) return verdict;
    // A removal is seen at once, not after the cache expires: ask the database about this path.
    if ((await this.trust.removedAmong(verdict.path.slice(1).map((c) => c.thumbprint))).length > 0) {
      anchors = await this.fresh();
      verdict = await buildPath(leaf, { given, ...anchors }, now, limits);
      if (!verdict.valid) return verdict;
    }
    const known = new Set([...anchors.roots, ...anchors.intermediates].map((c) => c.thumbprint));
    const learned = verdict.path.slice(1).filter((c) => !known.has(c.thumbprint));
    const remembered = learned.length > 0 ? await this.trust.remember(learned, (c) => dnText(c.cert.subject), now) : 0;
    return { ...(verdict as Extract<PathVerdict, { valid: true }>), remembered };
  }

  private fresh() {
    return this.trust.anchors(0);
  }
}
