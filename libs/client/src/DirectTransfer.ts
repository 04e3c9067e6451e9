import type { Writable } from 'node:stream';
import { PART_SIZE } from '#protocol';
import type { DirectPartTargets } from './api';
import { header, type ApiCalls } from './ApiCalls';
import { ApiError } from './errors';
import type { SourcePart } from './PartSources';
import type { Received } from './transport';

/** How often a part is sent to S3 (each time with a new URL) before it goes through the service. */
const DIRECT_ATTEMPTS = 3;

/**
 * Direct transfer, where the service offers it: 64 MiB grid parts go straight to S3 with presigned
 * URLs and are then recorded by the service; downloads follow the service's 307 to S3. Whatever the
 * service does not offer (a deployment without it, a content whose total is not known yet) goes
 * through the service as without `direct`.
 */
export class DirectTransfer {
  /** Set once the service said it offers no direct transfer: every later part goes through it. */
  private off = false;

  constructor(private readonly api: ApiCalls) {}

  /**
   * Sends part `p` of content `id` straight to S3 and has the service record it; false when it
   * must go through the service instead (not a grid part, direct transfer not offered, total not
   * known yet, or S3 did not take the part in DIRECT_ATTEMPTS tries: then no later part tries it). The service's 201 (this part completed the content) or its 409 for a content
   * already complete both end here: the caller checks the content's state afterwards.
   */
  async sendPart(owner: string, id: string, p: SourcePart, sha256: Buffer, signal?: AbortSignal): Promise<boolean> {
    if (this.off || p.start % PART_SIZE !== 0 || (p.length !== PART_SIZE && !p.last)) return false;
    const k = p.start / PART_SIZE + 1;
    const path = `/v1/${owner}/contents/${id}/direct-parts`;
    for (let attempt = 1; ; attempt++) {
      let target: DirectPartTargets['parts'][number];
      try {
        const res = await this.json('POST', path, { parts: [{ part: k, sha256: sha256.toString('base64') }] }, signal);
        target = (JSON.parse(res.text) as DirectPartTargets).parts[0]!;
      } catch (error) {
        if (error instanceof ApiError && (error.code === 'directTransferDisabled' || error.code === 'routeNotFound')) {
          this.off = true;
          return false;
        }
        if (error instanceof ApiError && error.code === 'totalUnknown') return false;
        throw error;
      }
      let etag: string | undefined;
      try {
        const sent = await this.api.transport.send({
          method: target.method,
          url: new URL(target.url),
          headers: withoutLength(target.headers),
          body: p.body,
          contentLength: p.length,
          signal,
        });
        etag = header(sent, 'etag');
      } catch (error) {
        if (signal?.aborted) throw error;
      }
      if (etag === undefined) {
        // S3 did not take it (unreachable, a refusal such as an expired URL, a broken connection):
        // again with a new URL; after the last try, this part and the rest go through the service.
        if (attempt < DIRECT_ATTEMPTS) continue;
        this.off = true;
        return false;
      }
      try {
        await this.json('POST', `${path}/${k}`, { etag }, signal);
        return true;
      } catch (error) {
        if (error instanceof ApiError && error.code === 'contentAlreadyComplete') return true;
        // S3 does not hold the part as sent (overwritten meanwhile): send it again.
        if (error instanceof ApiError && error.code === 'directPartMissing' && attempt < DIRECT_ATTEMPTS) continue;
        throw error;
      }
    }
  }

  /**
   * Follows a download's 307 to S3 with the Range the service was asked for (the URL is signed for
   * it); null when that failed, and the range is then fetched through the service.
   */
  async follow(answer: Received, range: string, sink: () => Writable, signal?: AbortSignal): Promise<Received | null> {
    const location = header(answer, 'location');
    if (answer.status !== 307 || !location) return null;
    try {
      // No Authorization: the URL carries its own signature.
      return await this.api.transport.send({ method: 'GET', url: new URL(location), headers: { range }, sink, signal });
    } catch (error) {
      if (signal?.aborted) throw error;
      return null;
    }
  }

  private json(method: string, path: string, body: unknown, signal?: AbortSignal): Promise<Received> {
    const bytes = Buffer.from(JSON.stringify(body));
    return this.api.call({
      method,
      url: this.api.url(path),
      headers: { 'content-type': 'application/json' },
      body: () => bytes,
      contentLength: bytes.length,
      signal,
    });
  }
}

/** The signed headers but Content-Length, which the transport sets from the part's length. */
function withoutLength(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => name.toLowerCase() !== 'content-length'));
}
