/** Who made a request, and which owners' contents they may act on. */
export interface Principal {
  kind: 'bearer' | 'session';
  subject: string;
  owners: readonly string[];
}
