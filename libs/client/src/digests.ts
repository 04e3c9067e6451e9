import { createHash } from 'node:crypto';
import { parseContentDigest } from '#protocol';

/** The SHA-256 of a body, read through once. */
export async function sha256Of(body: AsyncIterable<Uint8Array> | Iterable<Uint8Array>): Promise<Buffer> {
  const hash = createHash('sha256');
  for await (const chunk of body) hash.update(chunk);
  return hash.digest();
}

/** The SHA-256 (hex) a Repr-Digest names; null without one (or with one that cannot be read). */
export function reprSha256(reprDigest: string | undefined): string | null {
  try {
    return reprDigest ? (parseContentDigest(reprDigest)['sha-256']?.toString('hex') ?? null) : null;
  } catch {
    return null;
  }
}
