// The bytes of a soak content, made from its name on demand, so that no content is held in
// memory: any range can be made again to send, or to check a download against. Each 4 KiB block
// is one of 64 random blocks of the content's own (AES-256-CTR keystream), stamped with the
// block's index and the content's key, so that bytes from another offset or another content never
// pass for the right ones; plain copies keep it fast enough to feed several uploaders on one core.
const { createCipheriv, createHash } = require('node:crypto');

const BLOCK = 4096;
const POOL_BLOCKS = 64;
const CHUNK = 8 * 1024 * 1024;

class ContentBytes {
  /** @param {string} name unique per content within a seed, e.g. `${seed}/uploader-2/17` */
  constructor(name, size) {
    this.name = name;
    this.size = size;
    this.key = createHash('sha256').update(name).digest();
    this.pool = null;
    this.wholeSha256 = null;
  }

  blockPool() {
    this.pool ??= createCipheriv('aes-256-ctr', this.key, Buffer.alloc(16)).update(Buffer.alloc(BLOCK * POOL_BLOCKS));
    return this.pool;
  }

  /** Bytes [start, end] (inclusive). */
  range(start, end) {
    const length = end - start + 1;
    if (length <= 0) return Buffer.alloc(0);
    const pool = this.blockPool();
    const first = Math.floor(start / BLOCK);
    const last = Math.floor(end / BLOCK);
    const out = Buffer.allocUnsafe((last - first + 1) * BLOCK);
    for (let j = first; j <= last; j++) {
      const at = (j - first) * BLOCK;
      const k = (Math.imul(j, 2654435761) >>> 26) % POOL_BLOCKS;
      pool.copy(out, at, k * BLOCK, (k + 1) * BLOCK);
      out.writeUInt32BE(Math.floor(j / 4294967296), at);
      out.writeUInt32BE(j % 4294967296, at + 4);
      this.key.copy(out, at + 8, 0, 8);
    }
    const skip = start - first * BLOCK;
    return out.subarray(skip, skip + length);
  }

  /** SHA-256 (base64) of bytes [start, end]. */
  sha256Of(start, end) {
    const hash = createHash('sha256');
    for (let at = start; at <= end; at += CHUNK) hash.update(this.range(at, Math.min(end, at + CHUNK - 1)));
    return hash.digest('base64');
  }

  /** SHA-256 (base64) of the whole content, computed once. */
  sha256() {
    this.wholeSha256 ??= this.size === 0 ? createHash('sha256').digest('base64') : this.sha256Of(0, this.size - 1);
    return this.wholeSha256;
  }
}

module.exports = { ContentBytes };
