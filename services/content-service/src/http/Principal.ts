/** Who made a request, and which owners' contents they may act on. */
export interface Principal {
  kind: 'bearer' | 'session';
  subject: string;
  owners: readonly string[];
  /** A session's sign-in certificate: its SHA-1 thumbprint, hex (none for Bearer tokens). */
  thumbprint?: string;
}
