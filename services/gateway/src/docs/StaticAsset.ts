import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';

const gzipAsync = promisify(gzip);

/**
 * One file the reference page loads, held in memory and served under a URL that names its
 * content (`/docs/assets/<name>.<hash>.<ext>`), so it can be cached for good.
 */
export class StaticAsset {
  readonly path: string;
  /** Entity tags of the two representations (a strong tag names exactly one). */
  readonly etag: { identity: string; gzip: string };
  private compressed?: Promise<Buffer>;

  constructor(
    name: string,
    extension: 'js' | 'css',
    readonly contentType: string,
    readonly body: Buffer,
  ) {
    const hash = createHash('sha256').update(body).digest('base64url').slice(0, 16);
    this.path = `/docs/assets/${name}.${hash}.${extension}`;
    this.etag = { identity: `"${hash}"`, gzip: `"${hash}-gz"` };
  }

  /**
   * The body gzipped, compressed once (off the event loop) on first use and kept: the bundle is
   * about 1.7 MB, and a compressing middleware would spend that CPU again on every request.
   */
  gzipped(): Promise<Buffer> {
    return (this.compressed ??= gzipAsync(this.body));
  }
}
